#include "base/dynload.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void xr_dynload_report_append(char *report, size_t capacity, const char *fmt, ...) {
  if (!report || capacity == 0) return;
  size_t used = strnlen(report, capacity - 1);
  if (used > 0 && used + 2 < capacity) {
    memcpy(report + used, "; ", 3);
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(report + used, capacity - used, fmt, ap);
  va_end(ap);
}

/* dlerror() repeats the path at the front ("libX.so: cannot open shared object file: ...");
 * keep only the part after it so the report stays readable. */
static const char *dlerror_reason(const char *path) {
  const char *message = dlerror();
  if (!message) return "unknown dlopen error";
  size_t path_length = strlen(path);
  if (strncmp(message, path, path_length) == 0 && message[path_length] == ':') {
    message += path_length + 1;
    while (*message == ' ') message++;
  }
  if (strstr(message, "No such file or directory")) return "not found";
  return message;
}

/* The file a handle came from (the loader resolved a soname through its path). */
static void loaded_file(void *handle, const char *fallback, char *out, size_t capacity) {
  struct link_map *map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0]) {
    snprintf(out, capacity, "%s", map->l_name);
  } else {
    snprintf(out, capacity, "%s", fallback);
  }
}

static bool try_open(const char *path, const char *label, xr_dynload_library_t *library,
                     char *report, size_t capacity) {
  /* RTLD_LOCAL keeps vendor symbols out of the global namespace (two runtimes may clash). */
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    xr_dynload_report_append(report, capacity, "%s%s: %s", label, path, dlerror_reason(path));
    return false;
  }
  library->handle = handle;
  /* The file, not the soname: what `replay devices` and version strings show. */
  loaded_file(handle, path, library->path, sizeof library->path);
  xr_dynload_report_append(report, capacity, "%s%s: loaded", label, path);
  return true;
}

/* ---- the places searched after the loader's path ------------------------------------------ */

enum { MAX_PLACE_DIRS = 64 };

typedef struct place_dirs {
  size_t count;
  char path[MAX_PLACE_DIRS][PATH_MAX]; /* real paths, each once, in search order */
} place_dirs_t;

static void add_dir(place_dirs_t *dirs, const char *path) {
  char real[PATH_MAX];
  struct stat info;
  if (dirs->count == MAX_PLACE_DIRS || !realpath(path, real)) return;
  if (stat(real, &info) != 0 || !S_ISDIR(info.st_mode)) return;
  for (size_t i = 0; i < dirs->count; i++) {
    if (strcmp(dirs->path[i], real) == 0) return;
  }
  memcpy(dirs->path[dirs->count++], real, strlen(real) + 1);
}

static int newest_first(const void *a, const void *b) {
  return strverscmp(*(const char *const *)b, *(const char *const *)a);
}

/* Every directory matching `pattern`; versioned names (cuda-12.8, rocm-6.4.1) newest first. */
static void add_glob(place_dirs_t *dirs, const char *pattern, bool by_version) {
  glob_t found;
  if (glob(pattern, GLOB_ONLYDIR, NULL, &found) != 0) return;
  if (by_version) qsort(found.gl_pathv, found.gl_pathc, sizeof *found.gl_pathv, newest_first);
  for (size_t i = 0; i < found.gl_pathc; i++) add_dir(dirs, found.gl_pathv[i]);
  globfree(&found);
}

static void add_env_dir(place_dirs_t *dirs, const char *variable, const char *suffix) {
  const char *value = getenv(variable);
  if (!value || !value[0]) return;
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s%s", value, suffix);
  add_dir(dirs, path);
}

/* The pip wheels' libraries under one Python prefix (a venv, conda, /usr/local). */
static void add_python_prefix(place_dirs_t *dirs, const char *prefix) {
  char pattern[PATH_MAX + 64];
  snprintf(pattern, sizeof pattern, "%s/lib/python3*/*-packages/nvidia/*/lib", prefix);
  add_glob(dirs, pattern, false);
}

static void add_python_environments(place_dirs_t *dirs) {
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t length = strcspn(path, ":");
    char python[PATH_MAX];
    if (length > 0 && length < sizeof python - 16) {
      snprintf(python, sizeof python, "%.*s/python3", (int)length, path);
      if (access(python, X_OK) == 0) {
        snprintf(python, sizeof python, "%.*s/..", (int)length, path);
        add_python_prefix(dirs, python);
      }
    }
    path += length;
    if (*path == ':') path++;
  }
  const char *variables[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
  for (size_t i = 0; i < sizeof variables / sizeof *variables; i++) {
    const char *prefix = getenv(variables[i]);
    if (prefix && prefix[0]) add_python_prefix(dirs, prefix);
  }
  const char *home = getenv("HOME");
  if (home && home[0]) {
    char local[PATH_MAX + 16];
    snprintf(local, sizeof local, "%s/.local", home);
    add_python_prefix(dirs, local);
  }
  add_python_prefix(dirs, "/usr/local");
  add_python_prefix(dirs, "/usr");
}

static void collect_place_dirs(unsigned places, place_dirs_t *dirs) {
  dirs->count = 0;
  if (places & XR_DYNLOAD_IN_GPU_DRIVER) {
    add_dir(dirs, "/usr/local/nvidia/lib64");
    add_dir(dirs, "/usr/local/nvidia/lib");
    add_dir(dirs, "/usr/lib/wsl/lib");
  }
  if (places & XR_DYNLOAD_IN_CUDA) {
    add_env_dir(dirs, "CUDA_HOME", "/lib64");
    add_env_dir(dirs, "CUDA_PATH", "/lib64");
    add_dir(dirs, "/usr/local/cuda/lib64");
    add_glob(dirs, "/usr/local/cuda-*/lib64", true);
    add_python_environments(dirs);
  }
  if (places & XR_DYNLOAD_IN_ROCM) {
    add_env_dir(dirs, "ROCM_PATH", "/lib");
    add_dir(dirs, "/opt/rocm/lib");
    add_glob(dirs, "/opt/rocm-*/lib", true);
  }
}

/* Tries each candidate in each directory that holds it; once one loaded, reports the files the
 * search would have reached afterwards as not taken. */
static bool search_places(const xr_dynload_spec_t *spec, bool loaded,
                          xr_dynload_library_t *library, char *report, size_t capacity) {
  place_dirs_t *dirs = malloc(sizeof *dirs);
  if (!dirs) return loaded;
  collect_place_dirs(spec->places, dirs);
  char loaded_real[PATH_MAX] = "";
  if (loaded && !realpath(library->path, loaded_real)) loaded_real[0] = '\0';
  int not_taken = 0;
  for (size_t d = 0; d < dirs->count; d++) {
    for (size_t c = 0; c < spec->candidate_count; c++) {
      const char *name = spec->candidates[c];
      if (strchr(name, '/')) continue;
      char file[PATH_MAX + 64], real[PATH_MAX];
      snprintf(file, sizeof file, "%s/%s", dirs->path[d], name);
      if (!realpath(file, real)) continue; /* absent here */
      if (!loaded) {
        loaded = try_open(file, "", library, report, capacity);
        if (loaded && !realpath(library->path, loaded_real)) loaded_real[0] = '\0';
      } else if (strcmp(real, loaded_real) != 0 && not_taken++ < 3) {
        xr_dynload_report_append(report, capacity, "%s: not taken, an earlier one loaded", file);
      }
    }
  }
  if (!loaded) {
    if (dirs->count == 0) {
      xr_dynload_report_append(report, capacity, "no %s directory to search",
                               spec->places & XR_DYNLOAD_IN_ROCM   ? "ROCm"
                               : spec->places & XR_DYNLOAD_IN_CUDA ? "CUDA toolkit or pip wheel"
                                                                   : "GPU driver");
    } else {
      char searched[640] = "";
      for (size_t d = 0; d < dirs->count && d < 4; d++) {
        xr_dynload_report_append(searched, sizeof searched, "%s", dirs->path[d]);
      }
      xr_dynload_report_append(report, capacity, "not in %zu searched director%s (%s%s)",
                               dirs->count, dirs->count == 1 ? "y" : "ies", searched,
                               dirs->count > 4 ? "; ..." : "");
    }
  }
  free(dirs);
  return loaded;
}

xr_status_t xr_dynload_open(const xr_dynload_spec_t *spec, const xr_dynload_symbol_t *symbols,
                            size_t symbol_count, void *table, xr_dynload_library_t *out_library,
                            char *report, size_t report_capacity) {
  char local_report[1024] = "";
  if (!report || report_capacity == 0) {
    report = local_report;
    report_capacity = sizeof local_report;
  }
  xr_dynload_library_t library = {0};
  const char *env = spec->env_override;
  const char *override = env ? getenv(env) : NULL;
  if (override && strcmp(override, "off") == 0) {
    xr_dynload_report_append(report, report_capacity, "%s=off: %s disabled", env, spec->label);
    return xr_error(XR_UNAVAILABLE, "%s", report);
  }
  bool loaded = false;
  if (override && override[0]) {
    char label[96];
    snprintf(label, sizeof label, "%s=", env);
    loaded = try_open(override, label, &library, report, report_capacity);
  }
  bool overridden = loaded;
  for (size_t i = 0; !loaded && i < spec->candidate_count; i++) {
    loaded = try_open(spec->candidates[i], "", &library, report, report_capacity);
  }
  if (spec->places && !overridden) {
    loaded = search_places(spec, loaded, &library, report, report_capacity);
  }
  if (!loaded) return xr_error(XR_UNAVAILABLE, "%s", report);

  for (size_t i = 0; i < symbol_count; i++) {
    void *address = xr_dynload_find(&library, symbols[i].name);
    if (!address && symbols[i].required) {
      xr_dynload_report_append(report, report_capacity, "missing required symbol %s",
                               symbols[i].name);
      dlclose(library.handle);
      return xr_error(XR_UNAVAILABLE, "%s", report);
    }
    /* memcpy: ISO C has no object-to-function pointer conversion; POSIX guarantees the
     * representation is the same. */
    memcpy((char *)table + symbols[i].offset, &address, sizeof address);
  }
  *out_library = library;
  return XR_OK;
}

void *xr_dynload_find(const xr_dynload_library_t *library, const char *name) {
  if (!library->handle) return NULL;
  dlerror();
  return dlsym(library->handle, name);
}

bool xr_dynload_probe(const xr_dynload_spec_t *spec, char *report, size_t report_capacity) {
  char attempts[1024] = "";
  xr_dynload_library_t library = {0};
  char saved_error[1024];
  snprintf(saved_error, sizeof saved_error, "%s", xr_last_error());
  xr_status_t status = xr_dynload_open(spec, NULL, 0, NULL, &library, attempts, sizeof attempts);
  xr_error(XR_OK, "%s", saved_error);
  if (status != XR_OK) {
    xr_dynload_report_append(report, report_capacity, "%s: absent (%s)", spec->label, attempts);
    return false;
  }
  /* What a reader wants beside the file taken: candidates that exist but failed to load, and
   * those the search reached after it (the plain "not found"s and the "loaded" are noise). */
  char notes[1024] = "";
  for (char *piece = attempts; *piece;) {
    size_t length = strcspn(piece, ";");
    char saved = piece[length];
    piece[length] = '\0';
    if (!strstr(piece, ": not found") && !strstr(piece, ": loaded")) {
      xr_dynload_report_append(notes, sizeof notes, "%s", piece);
    }
    piece[length] = saved;
    piece += length;
    while (*piece == ';' || *piece == ' ') piece++;
  }
  if (notes[0]) {
    xr_dynload_report_append(report, report_capacity, "%s: %s (%s)", spec->label, library.path,
                             notes);
  } else {
    xr_dynload_report_append(report, report_capacity, "%s: %s", spec->label, library.path);
  }
  xr_dynload_close(&library);
  return true;
}

void xr_dynload_close(xr_dynload_library_t *library) {
  if (library && library->handle) {
    dlclose(library->handle);
    library->handle = NULL;
  }
}
