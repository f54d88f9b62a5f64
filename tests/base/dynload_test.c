/* The dlopen loader's search (base/dynload.h): the loader's path first, then the places where
 * vendor stacks live unregistered (a CUDA toolkit, a Python environment's pip wheels, ROCm),
 * the override above all; which file was taken and why the others were not. The places are
 * built under TEST_TMPDIR with a real shared library (this process's libz, copied under a name
 * no loader path has), and found through the environment variables the search reads. Each
 * Criterion case runs in its own process, so the variables set here stay in it. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"

#define FAKE "libxr_dynload_fake.so.1"
/* Room for the test root, a place under it and a file name. */
#define LONG (3 * PATH_MAX)
/* snprintf into an array, asserting nothing was cut. */
#define FORMAT(buffer, ...) \
  cr_assert_lt(snprintf(buffer, sizeof buffer, __VA_ARGS__), (int)sizeof buffer, "path too long")

static char root[PATH_MAX];

static void make_dirs(const char *path) {
  char partial[LONG];
  for (const char *p = path + 1; (p = strchr(p, '/')); p++) {
    FORMAT(partial, "%.*s", (int)(p - path), path);
    mkdir(partial, 0755);
  }
  mkdir(path, 0755);
}

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  cr_assert(in && out, "copy %s -> %s", from, to);
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, in)) > 0) fwrite(buffer, 1, n, out);
  fclose(in);
  fclose(out);
}

/* Puts a loadable copy of libz at DIR/FAKE (DIR under the test's root) and returns its path. */
static const char *plant(const char *dir, char *out, size_t capacity) {
  void *z = dlopen("libz.so.1", RTLD_NOW);
  cr_assert(z, "libz.so.1 loads: %s", dlerror());
  struct link_map *map = NULL;
  cr_assert_eq(dlinfo(z, RTLD_DI_LINKMAP, &map), 0);
  char path[LONG];
  FORMAT(path, "%s/%s", root, dir);
  make_dirs(path);
  cr_assert_lt(snprintf(out, capacity, "%s/%s", path, FAKE), (int)capacity);
  copy_file(map->l_name, out);
  return out;
}

static void write_text(const char *path, const char *text, mode_t mode);

/* Puts a file of FAKE's name that is no library at DIR/FAKE (DIR under the test's root). */
static const char *plant_broken(const char *dir, char *out, size_t capacity) {
  char path[LONG];
  FORMAT(path, "%s/%s", root, dir);
  make_dirs(path);
  cr_assert_lt(snprintf(out, capacity, "%s/%s", path, FAKE), (int)capacity);
  write_text(out, "not an ELF file\n", 0644);
  return out;
}

static void write_text(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "%s", path);
  fputs(text, f);
  fclose(f);
  chmod(path, mode);
}

/* Points an environment variable at a folder under the test's root. */
static void point(const char *variable, const char *under_root) {
  char path[LONG];
  FORMAT(path, "%s/%s", root, under_root);
  setenv(variable, path, 1);
}

static void setup(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  FORMAT(root, "%s/dynload_%d", tmp && tmp[0] ? tmp : "/tmp", (int)getpid());
  make_dirs(root);
  char resolved[PATH_MAX];
  cr_assert(realpath(root, resolved));
  memcpy(root, resolved, sizeof root);
  /* Nothing of this machine's own environments: HOME and PATH point into the test's root. */
  setenv("HOME", root, 1);
  setenv("PATH", "/usr/bin:/bin", 1);
  unsetenv("CUDA_HOME");
  unsetenv("CUDA_PATH");
  unsetenv("VIRTUAL_ENV");
  unsetenv("CONDA_PREFIX");
  unsetenv("ROCM_PATH");
  unsetenv("XR_FAKE_LIBRARY");
}

static const xr_dynload_spec_t fake_cuda = {"Fake", "XR_FAKE_LIBRARY",
                                            (const char *const[]){FAKE}, 1, XR_DYNLOAD_IN_CUDA};

TestSuite(dynload, .init = setup);

Test(dynload, pip_wheel_of_the_python3_on_path) {
  char planted[LONG], real[LONG];
  plant("venv/lib/python3.12/site-packages/nvidia/cu13/lib", planted, sizeof planted);
  char bin[LONG], python[LONG], path[LONG];
  FORMAT(bin, "%s/venv/bin", root);
  make_dirs(bin);
  FORMAT(python, "%s/python3", bin);
  write_text(python, "#!/bin/sh\n", 0755);
  FORMAT(path, "/usr/bin:%s", bin);
  setenv("PATH", path, 1);

  xr_dynload_library_t library = {0};
  char report[2048] = "";
  cr_assert_eq(xr_dynload_open(&fake_cuda, NULL, 0, NULL, &library, report, sizeof report),
               XR_OK, "%s", report);
  cr_assert(realpath(planted, real));
  cr_expect_str_eq(library.path, real, "took %s; report: %s", library.path, report);
  cr_expect(strstr(report, FAKE ": not found"), "the loader's path was tried first: %s", report);
  xr_dynload_close(&library);
}

Test(dynload, toolkit_before_python_and_the_other_not_taken) {
  char toolkit[LONG], wheel[LONG];
  plant("cuda-13/lib64", toolkit, sizeof toolkit);
  plant("conda/lib/python3.11/site-packages/nvidia/cublas/lib", wheel, sizeof wheel);
  point("CUDA_HOME", "cuda-13");
  point("CONDA_PREFIX", "conda");

  char report[2048] = "";
  xr_dynload_library_t library = {0};
  cr_assert_eq(xr_dynload_open(&fake_cuda, NULL, 0, NULL, &library, report, sizeof report),
               XR_OK, "%s", report);
  cr_expect_str_eq(library.path, toolkit, "report: %s", report);
  char expected[LONG];
  FORMAT(expected, "%s: not taken, an earlier one loaded", wheel);
  cr_expect(strstr(report, expected), "the wheel's copy is named as not taken: %s", report);
  xr_dynload_close(&library);

  /* The probe's one line names the file taken and the one not taken. */
  char probe[2048] = "";
  cr_assert(xr_dynload_probe(&fake_cuda, probe, sizeof probe));
  cr_expect(strncmp(probe, "Fake: ", 6) == 0 && strstr(probe, toolkit) && strstr(probe, expected),
            "%s", probe);
}

Test(dynload, a_file_that_does_not_load_is_reported_and_passed_over) {
  /* $CUDA_HOME/lib64 is searched before the Python environments: a text file there does not
   * load, the wheel's copy does. */
  char good[LONG], bad[LONG];
  plant("conda/lib/python3.12/site-packages/nvidia/cu13/lib", good, sizeof good);
  plant_broken("broken/lib64", bad, sizeof bad);
  point("CUDA_HOME", "broken");
  point("CONDA_PREFIX", "conda");

  char probe[2048] = "";
  cr_assert(xr_dynload_probe(&fake_cuda, probe, sizeof probe), "%s", probe);
  cr_expect(strstr(probe, good), "the wheel's copy is taken: %s", probe);
  cr_expect(strstr(probe, bad), "the probe names the file that did not load: %s", probe);

  /* Only a broken copy anywhere: unavailable, with its reason and where the search looked. */
  unsetenv("CONDA_PREFIX");
  const xr_dynload_spec_t rocm = {"Fake", "XR_FAKE_LIBRARY", (const char *const[]){FAKE}, 1,
                                  XR_DYNLOAD_IN_ROCM};
  plant_broken("broken/lib", bad, sizeof bad);
  point("ROCM_PATH", "broken");
  char report[2048] = "";
  xr_dynload_library_t library = {0};
  cr_assert_eq(xr_dynload_open(&rocm, NULL, 0, NULL, &library, report, sizeof report),
               XR_UNAVAILABLE);
  cr_expect(strstr(report, bad) && strstr(report, "searched director"), "%s", report);
}

Test(dynload, override_wins_and_off_disables) {
  char toolkit[LONG], other[LONG];
  plant("cuda/lib64", toolkit, sizeof toolkit);
  plant("elsewhere", other, sizeof other);
  point("CUDA_HOME", "cuda");
  setenv("XR_FAKE_LIBRARY", other, 1);
  char report[2048] = "";
  xr_dynload_library_t library = {0};
  cr_assert_eq(xr_dynload_open(&fake_cuda, NULL, 0, NULL, &library, report, sizeof report),
               XR_OK, "%s", report);
  cr_expect_str_eq(library.path, other, "%s", report);
  cr_expect_null(strstr(report, toolkit), "an override is not second-guessed: %s", report);
  xr_dynload_close(&library);

  setenv("XR_FAKE_LIBRARY", "off", 1);
  report[0] = '\0';
  cr_expect_eq(xr_dynload_open(&fake_cuda, NULL, 0, NULL, &library, report, sizeof report),
               XR_UNAVAILABLE);
  cr_expect(strstr(report, "XR_FAKE_LIBRARY=off"), "%s", report);
}

Test(dynload, nothing_anywhere_says_where_it_looked) {
  char home[LONG];
  FORMAT(home, "%s/empty-toolkit/lib64", root);
  make_dirs(home);
  point("CUDA_HOME", "empty-toolkit");
  char report[2048] = "";
  xr_dynload_library_t library = {0};
  cr_assert_eq(xr_dynload_open(&fake_cuda, NULL, 0, NULL, &library, report, sizeof report),
               XR_UNAVAILABLE);
  cr_expect(strstr(report, FAKE ": not found") && strstr(report, "empty-toolkit/lib64"),
            "%s", report);
}

/* The table every loader takes its spec from: labels, XR_*_LIBRARY overrides, sonames. */
Test(vendor_libraries, every_row_is_well_formed) {
  for (int id = 0; id < XR_VENDOR_LIBRARY_COUNT; id++) {
    const xr_dynload_spec_t *spec = &xr_vendor_libraries[id];
    cr_assert(spec->label && spec->label[0], "row %d has a label", id);
    size_t length = strlen(spec->env_override);
    cr_expect(strncmp(spec->env_override, "XR_", 3) == 0 && length > 11 &&
                  strcmp(spec->env_override + length - 8, "_LIBRARY") == 0,
              "%s: %s", spec->label, spec->env_override);
    cr_expect_gt(spec->candidate_count, 0, "%s", spec->label);
    for (size_t c = 0; c < spec->candidate_count; c++) {
      cr_expect(strncmp(spec->candidates[c], "lib", 3) == 0 && strstr(spec->candidates[c], ".so") &&
                    !strchr(spec->candidates[c], '/'),
                "%s: candidate %s is a soname", spec->label, spec->candidates[c]);
    }
    for (int other = 0; other < id; other++) {
      cr_expect_str_neq(spec->env_override, xr_vendor_libraries[other].env_override);
    }
  }
  /* ROCm 7's HIP runtime is tried first. */
  cr_expect_str_eq(xr_vendor_libraries[XR_VENDOR_LIBRARY_HIP].candidates[0], "libamdhip64.so.7");
}
