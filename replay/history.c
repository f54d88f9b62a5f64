/* The history of runs in SQLite: see history.h. */
#include "replay/history.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* PRAGMA application_id of our files ("xrhi"): tells a history from another program's database
 * without guessing from table names. */
#define XR_HISTORY_APPLICATION_ID 0x78726869

struct xr_history {
  sqlite3 *db;
  char *path;
  bool empty; /* a SQLite file without tables yet: it holds no runs */
};

const char *xr_history_path(const xr_history_t *h) { return h->path; }

/* The failed call's sentence, naming the file: "h.db: not a SQLite database (...)". */
static xr_status_t db_error(const xr_history_t *h, int rc, const char *what) {
  const char *detail = sqlite3_errmsg(h->db);
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      return xr_error(XR_INVALID_ARGUMENT, "%s: not a SQLite database (%s)", h->path, detail);
    case SQLITE_CORRUPT:
      return xr_error(XR_DATA_LOSS, "%s: a damaged SQLite database (%s)", h->path, detail);
    case SQLITE_BUSY:
      return xr_error(XR_UNAVAILABLE, "%s: %s: another process held the database for over %d s",
                      h->path, what, XR_HISTORY_BUSY_MS / 1000);
    default:
      return xr_error(XR_UNAVAILABLE, "%s: %s: %s", h->path, what, detail);
  }
}

/* Runs SQL that returns no rows we need. */
static xr_status_t exec(xr_history_t *h, const char *sql, const char *what) {
  int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? XR_OK : db_error(h, rc, what);
}

/* The single integer a query returns. */
static xr_status_t query_int(xr_history_t *h, const char *sql, int64_t *out) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    *out = sqlite3_column_int64(s, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(s);
  return rc == SQLITE_OK ? XR_OK : db_error(h, rc, "reading it");
}

/* WAL mode (it persists in the file). Leaving the rollback journal needs the file to itself, and
 * SQLite answers BUSY at once rather than wait: the first writers of a new file (a job array's
 * tasks all starting on it) retry until XR_HISTORY_BUSY_MS has passed. */
static xr_status_t use_wal(xr_history_t *h) {
  for (int waited_ms = 0;; waited_ms += 10) {
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(h->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
      const char *mode = (const char *)sqlite3_column_text(s, 0);
      xr_status_t st = mode && !strcmp(mode, "wal")
                           ? XR_OK
                           : xr_error(XR_UNAVAILABLE,
                                      "%s: cannot turn on WAL mode (the journal stays \"%s\"), "
                                      "without which writers at once are not safe",
                                      h->path, mode ? mode : "?");
      sqlite3_finalize(s);
      return st;
    }
    sqlite3_finalize(s);
    if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= XR_HISTORY_BUSY_MS)
      return db_error(h, rc, "turning on WAL");
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
}

/* Ours, another program's, or empty (no tables yet: ours to fill). */
static xr_status_t check_identity(xr_history_t *h) {
  int64_t id = 0, version = 0, tables = 0;
  xr_status_t st = query_int(h, "PRAGMA application_id", &id);
  if (st == XR_OK) st = query_int(h, "PRAGMA user_version", &version);
  if (st == XR_OK) st = query_int(h, "SELECT count(*) FROM sqlite_master", &tables);
  if (st != XR_OK) return st;
  h->empty = id == 0 && tables == 0;
  if (h->empty) return XR_OK;
  if (id != XR_HISTORY_APPLICATION_ID) {
    /* Its first tables' names say whose it is. */
    char names[256] = "";
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT group_concat(name, ', '), (SELECT count(*) FROM sqlite_master "
                           "WHERE type = 'table') FROM (SELECT name FROM sqlite_master "
                           "WHERE type = 'table' ORDER BY name LIMIT 4)",
                           -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
      snprintf(names, sizeof names, "%s", (const char *)sqlite3_column_text(s, 0));
      tables = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: not an xreplay history: a SQLite database of another program "
                    "(application_id %lld; tables %s%s)",
                    h->path, (long long)id, names[0] ? names : "none",
                    tables > 4 ? ", ..." : "");
  }
  if (version > XR_HISTORY_SCHEMA)
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: a history of schema %lld, from a later xreplay (this one reads up to %d)",
                    h->path, (long long)version, XR_HISTORY_SCHEMA);
  return XR_OK;
}

/* One row per run and device, one per op result; `ops` says how many results a whole run has,
 * so that a complete run can be told from the database alone. */
static const char schema[] =
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  invocation INTEGER NOT NULL," /* the first run of the same command (--hal=A,B) */
    "  date TEXT NOT NULL, bundle TEXT NOT NULL, bundle_hash TEXT NOT NULL,"
    "  hal TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL,"
    "  driver_version TEXT NOT NULL, runtime_version TEXT NOT NULL,"
    "  options TEXT," /* JSON */
    "  host TEXT NOT NULL,"
    "  finished INTEGER NOT NULL, cancelled INTEGER NOT NULL,"
    "  ops INTEGER NOT NULL);"
    "CREATE TABLE results ("
    "  run INTEGER NOT NULL REFERENCES runs(id),"
    "  position INTEGER NOT NULL," /* in the report */
    "  op_index INTEGER NOT NULL," /* in the bundle */
    "  name TEXT NOT NULL, args TEXT NOT NULL, count REAL NOT NULL,"
    "  outcome TEXT NOT NULL, message TEXT NOT NULL, kernel TEXT NOT NULL,"
    "  iterations INTEGER NOT NULL,"
    "  median_us REAL, min_us REAL, p10_us REAL, p90_us REAL, iqr_us REAL,"
    "  noise_percent REAL, contended INTEGER, unstable INTEGER,"
    "  samples_us TEXT," /* JSON array, in the order taken */
    "  trace_us REAL,"
    "  PRIMARY KEY (run, position));"
    "CREATE INDEX results_by_op ON results (name, args);";

xr_status_t xr_history_open(const char *path, bool write, xr_history_t **out_history) {
  *out_history = NULL;
  struct stat info;
  bool exists = stat(path, &info) == 0;
  int err = exists ? 0 : errno;
  if (!exists && (!write || err != ENOENT))
    return xr_error(err == ENOENT ? XR_NOT_FOUND : XR_UNAVAILABLE, "%s: cannot open: %s", path,
                    strerror(err));
  if (exists && S_ISDIR(info.st_mode))
    return xr_error(XR_INVALID_ARGUMENT, "%s: a directory, not a history database", path);
  xr_history_t *h = calloc(1, sizeof *h);
  if (!h || !(h->path = strdup(path))) {
    free(h);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  }
  /* Readers open read-write where they may, so that the last to close removes the WAL files
   * (a read-only connection leaves them behind). */
  int flags = write                      ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
              : access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE
                                         : SQLITE_OPEN_READONLY;
  int rc = sqlite3_open_v2(path, &h->db, flags, NULL);
  if (rc != SQLITE_OK) {
    err = h->db ? sqlite3_system_errno(h->db) : 0;
    xr_error(XR_UNAVAILABLE, "%s: cannot open: %s%s%s", path, sqlite3_errstr(rc),
             err ? ": " : "", err ? strerror(err) : "");
    xr_history_close(h);
    return XR_UNAVAILABLE;
  }
  sqlite3_busy_timeout(h->db, XR_HISTORY_BUSY_MS);
  xr_status_t st = check_identity(h);
  /* Another program's file is left as it was: WAL mode only once it is known to be ours. */
  if (st == XR_OK && write) st = use_wal(h);
  /* Tables made under the write lock, so that two first writers do not both make them. */
  if (st == XR_OK && write) st = exec(h, "BEGIN IMMEDIATE", "taking the write lock");
  if (st == XR_OK && write) {
    st = check_identity(h);
    if (st == XR_OK && h->empty) {
      char sql[4096];
      snprintf(sql, sizeof sql, "%sPRAGMA application_id=%d;PRAGMA user_version=%d;", schema,
               XR_HISTORY_APPLICATION_ID, XR_HISTORY_SCHEMA);
      st = exec(h, sql, "creating its tables");
      h->empty = false;
    }
    st = st == XR_OK ? exec(h, "COMMIT", "creating its tables")
                     : (sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL), st);
  }
  if (st != XR_OK) {
    xr_history_close(h);
    return st;
  }
  *out_history = h;
  return XR_OK;
}

void xr_history_close(xr_history_t *h) {
  if (!h) return;
  sqlite3_close(h->db);
  free(h->path);
  free(h);
}

/* ------------------------------------------------------------------------------------------ */
/* op results: one table of columns, for writing, reading and the report made of a run        */

typedef enum kind {
  TEXT_COLUMN,    /* const char *; "" stored as "" */
  REAL_COLUMN,    /* double; NAN is NULL */
  TIME_COLUMN,    /* double; below 0 (none) is NULL */
  FLAG_COLUMN,    /* int 1/0; -1 (not recorded) is NULL */
  INT_COLUMN,     /* int */
  INDEX_COLUMN,   /* int64_t */
  SAMPLES_COLUMN, /* sample_count and samples_us, as a JSON array */
} kind_t;

typedef struct column {
  const char *name; /* the column's, and the report's key but for op_index and contended */
  kind_t kind;
  size_t offset;    /* in xr_report_entry_t */
} column_t;

#define COLUMN(field, kind) \
  { #field, kind, offsetof(xr_report_entry_t, field) }
static const column_t columns[] = {
    {"op_index", INDEX_COLUMN, offsetof(xr_report_entry_t, index)},
    COLUMN(name, TEXT_COLUMN),
    COLUMN(args, TEXT_COLUMN),
    COLUMN(count, REAL_COLUMN),
    COLUMN(outcome, TEXT_COLUMN),
    COLUMN(message, TEXT_COLUMN),
    COLUMN(kernel, TEXT_COLUMN),
    COLUMN(iterations, INT_COLUMN),
    COLUMN(median_us, TIME_COLUMN),
    COLUMN(min_us, REAL_COLUMN),
    COLUMN(p10_us, REAL_COLUMN),
    COLUMN(p90_us, REAL_COLUMN),
    COLUMN(iqr_us, REAL_COLUMN),
    COLUMN(noise_percent, REAL_COLUMN),
    COLUMN(contended, FLAG_COLUMN),
    COLUMN(unstable, FLAG_COLUMN),
    {"samples_us", SAMPLES_COLUMN, 0},
    COLUMN(trace_us, TIME_COLUMN),
};
#undef COLUMN
#define COLUMN_COUNT (sizeof columns / sizeof columns[0])

#define FIELD(e, c, type) (*(type *)((char *)(e) + (c)->offset))

/* "name, args, ..." with each column prefixed by `prefix` ("s."). */
static void column_list(const char *prefix, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t k = 0; k < COLUMN_COUNT && len < size; k++)
    len += (size_t)snprintf(out + len, size - len, "%s%s%s", k ? ", " : "", prefix,
                            columns[k].name);
}

static int bind_result(sqlite3_stmt *s, int at, const column_t *c, const xr_report_entry_t *e) {
  switch (c->kind) {
    case TEXT_COLUMN: {
      const char *text = FIELD(e, c, const char *);
      return sqlite3_bind_text(s, at, text ? text : "", -1, SQLITE_STATIC);
    }
    case REAL_COLUMN: {
      double x = FIELD(e, c, double);
      return isfinite(x) ? sqlite3_bind_double(s, at, x) : sqlite3_bind_null(s, at);
    }
    case TIME_COLUMN: {
      double x = FIELD(e, c, double);
      return x >= 0 && isfinite(x) ? sqlite3_bind_double(s, at, x) : sqlite3_bind_null(s, at);
    }
    case FLAG_COLUMN: {
      int flag = FIELD(e, c, int);
      return flag < 0 ? sqlite3_bind_null(s, at) : sqlite3_bind_int(s, at, flag != 0);
    }
    case INT_COLUMN: return sqlite3_bind_int(s, at, FIELD(e, c, int));
    case INDEX_COLUMN: return sqlite3_bind_int64(s, at, FIELD(e, c, int64_t));
    case SAMPLES_COLUMN: {
      if (!e->sample_count) return sqlite3_bind_null(s, at);
      cJSON *list = cJSON_CreateDoubleArray(e->samples_us, e->sample_count);
      char *text = list ? cJSON_PrintUnformatted(list) : NULL;
      cJSON_Delete(list);
      if (!text) return SQLITE_NOMEM;
      return sqlite3_bind_text(s, at, text, -1, free);
    }
  }
  return SQLITE_MISUSE;
}

/* Column `at` of a row into the entry (strings valid until the next step). */
static void read_result(sqlite3_stmt *s, int at, const column_t *c, xr_report_entry_t *e) {
  bool null = sqlite3_column_type(s, at) == SQLITE_NULL;
  switch (c->kind) {
    case TEXT_COLUMN: {
      const char *text = (const char *)sqlite3_column_text(s, at);
      FIELD(e, c, const char *) = text ? text : "";
      break;
    }
    case REAL_COLUMN: FIELD(e, c, double) = null ? NAN : sqlite3_column_double(s, at); break;
    case TIME_COLUMN: FIELD(e, c, double) = null ? -1 : sqlite3_column_double(s, at); break;
    case FLAG_COLUMN: FIELD(e, c, int) = null ? -1 : sqlite3_column_int(s, at) != 0; break;
    case INT_COLUMN: FIELD(e, c, int) = sqlite3_column_int(s, at); break;
    case INDEX_COLUMN: FIELD(e, c, int64_t) = sqlite3_column_int64(s, at); break;
    case SAMPLES_COLUMN: {
      e->sample_count = 0;
      cJSON *list = null ? NULL : cJSON_Parse((const char *)sqlite3_column_text(s, at)), *v;
      cJSON_ArrayForEach(v, list) {
        if (e->sample_count == XR_REPORT_MAX_SAMPLES) break;
        if (cJSON_IsNumber(v)) e->samples_us[e->sample_count++] = v->valuedouble;
      }
      cJSON_Delete(list);
      break;
    }
  }
}

/* The entry's fields a history does not keep, as a report read back leaves them absent. */
static void clear_entry(xr_report_entry_t *e) {
  *e = (xr_report_entry_t){
      .family = "", .peak_dtype = "", .bound = "", .stop_reason = "", .launch = "",
      .peak_basis = "", .above_ceiling = "", .tflops = NAN, .gbps = NAN, .peak_percent = NAN,
      .flops = NAN, .bytes = NAN, .replay_over_trace = NAN, .noise_met = -1,
      .check_passed = -1, .check_nmse = NAN, .nmse_vs_first = NAN};
}

/* The entry as the op object of a JSON report, for xr_report_from_json. */
static cJSON *entry_json(const xr_report_entry_t *e) {
  cJSON *o = cJSON_CreateObject();
  for (size_t k = 0; o && k < COLUMN_COUNT; k++) {
    const column_t *c = &columns[k];
    switch (c->kind) {
      case TEXT_COLUMN: cJSON_AddStringToObject(o, c->name, FIELD(e, c, const char *)); break;
      case REAL_COLUMN:
        if (isfinite(FIELD(e, c, double))) cJSON_AddNumberToObject(o, c->name, FIELD(e, c, double));
        break;
      case TIME_COLUMN:
        if (FIELD(e, c, double) >= 0) cJSON_AddNumberToObject(o, c->name, FIELD(e, c, double));
        break;
      case FLAG_COLUMN: {
        int flag = FIELD(e, c, int);
        if (flag < 0) break;
        /* contended lives in the report's "contention" object */
        cJSON *in = strcmp(c->name, "contended") ? o : cJSON_AddObjectToObject(o, "contention");
        cJSON_AddBoolToObject(in, c->name, flag);
        break;
      }
      case INT_COLUMN: cJSON_AddNumberToObject(o, c->name, FIELD(e, c, int)); break;
      case INDEX_COLUMN: cJSON_AddNumberToObject(o, "index", (double)FIELD(e, c, int64_t)); break;
      case SAMPLES_COLUMN:
        if (e->sample_count)
          cJSON_AddItemToObject(o, c->name,
                                cJSON_CreateDoubleArray(e->samples_us, e->sample_count));
        break;
    }
  }
  return o;
}

/* ------------------------------------------------------------------------------------------ */
/* recording                                                                                   */

static const char insert_run[] =
    "INSERT INTO runs (id, invocation, date, bundle, bundle_hash, hal, device, driver, "
    "driver_version, runtime_version, options, host, finished, cancelled, ops) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

static int bind_run(sqlite3_stmt *s, int64_t id, int64_t invocation,
                    const xr_report_contents_t *r, const char *host) {
  const char *texts[] = {r->date,   r->bundle,         r->bundle_hash,     r->hal,
                         r->device, r->driver,         r->driver_version, r->runtime_version};
  int rc = sqlite3_bind_int64(s, 1, id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 2, invocation);
  for (int k = 0; rc == SQLITE_OK && k < 8; k++)
    rc = sqlite3_bind_text(s, 3 + k, texts[k] ? texts[k] : "", -1, SQLITE_STATIC);
  char *options = r->options ? cJSON_PrintUnformatted(r->options) : NULL;
  if (rc == SQLITE_OK)
    rc = options ? sqlite3_bind_text(s, 11, options, -1, free) : sqlite3_bind_null(s, 11);
  else
    free(options);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(s, 12, host ? host : "", -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 13, r->finished);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(s, 14, r->cancelled);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 15, (sqlite3_int64)r->op_count);
  return rc;
}

/* Steps an INSERT once and resets it for the next row. */
static int insert_step(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

xr_status_t xr_history_record(xr_history_t *h, const xr_report_contents_t *const *reports,
                              size_t count, const char *host, int64_t *out_run_ids) {
  char list[512], sql[1024];
  column_list("", list, sizeof list);
  snprintf(sql, sizeof sql, "INSERT INTO results (run, position, %s) VALUES (?, ?", list);
  for (size_t k = 0; k < COLUMN_COUNT; k++) strcat(sql, ", ?");
  strcat(sql, ")");
  /* BEGIN IMMEDIATE takes the write lock before anything is read: the next id is ours. */
  xr_status_t st = exec(h, "BEGIN IMMEDIATE", "taking the write lock");
  if (st != XR_OK) return st;
  sqlite3_stmt *run = NULL, *result = NULL;
  int64_t first = 0;
  st = query_int(h, "SELECT coalesce(max(id), 0) + 1 FROM runs", &first);
  int rc = st == XR_OK ? sqlite3_prepare_v2(h->db, insert_run, -1, &run, NULL) : SQLITE_OK;
  if (st == XR_OK && rc == SQLITE_OK) rc = sqlite3_prepare_v2(h->db, sql, -1, &result, NULL);
  for (size_t r = 0; st == XR_OK && rc == SQLITE_OK && r < count; r++) {
    const xr_report_contents_t *c = reports[r];
    out_run_ids[r] = first + (int64_t)r;
    rc = bind_run(run, out_run_ids[r], first, c, host);
    if (rc == SQLITE_OK) rc = insert_step(run);
    for (size_t i = 0; rc == SQLITE_OK && i < c->op_count; i++) {
      rc = sqlite3_bind_int64(result, 1, out_run_ids[r]);
      if (rc == SQLITE_OK) rc = sqlite3_bind_int64(result, 2, (sqlite3_int64)i);
      for (size_t k = 0; rc == SQLITE_OK && k < COLUMN_COUNT; k++)
        rc = bind_result(result, 3 + (int)k, &columns[k], &c->ops[i]);
      if (rc == SQLITE_OK) rc = insert_step(result);
    }
  }
  if (st == XR_OK && rc != SQLITE_OK) st = db_error(h, rc, "recording the run");
  sqlite3_finalize(run);
  sqlite3_finalize(result);
  if (st == XR_OK) st = exec(h, "COMMIT", "recording the run");
  if (st != XR_OK) sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* reading                                                                                     */

/* The runs columns read into xr_history_run_t, from column 0 of a row. */
static const char run_columns[] =
    "r.id, r.invocation, r.date, r.bundle, r.bundle_hash, r.hal, r.device, r.driver, "
    "r.driver_version, r.runtime_version, r.options, r.host, r.finished, r.cancelled, r.ops, "
    "(SELECT count(*) FROM results o WHERE o.run = r.id AND o.outcome = 'ok')";
#define RUN_COLUMN_COUNT 16

static const char *text_at(sqlite3_stmt *s, int at) {
  const char *text = (const char *)sqlite3_column_text(s, at);
  return text ? text : "";
}

static void read_run(sqlite3_stmt *s, xr_history_run_t *run) {
  run->id = sqlite3_column_int64(s, 0);
  run->invocation = sqlite3_column_int64(s, 1);
  const char **texts[] = {&run->date,   &run->bundle,         &run->bundle_hash,
                          &run->hal,    &run->device,         &run->driver,
                          &run->driver_version, &run->runtime_version, &run->options,
                          &run->host};
  for (int k = 0; k < 10; k++) *texts[k] = text_at(s, 2 + k);
  run->finished = sqlite3_column_int(s, 12) != 0;
  run->cancelled = sqlite3_column_int(s, 13) != 0;
  run->ops = sqlite3_column_int64(s, 14);
  run->succeeded = sqlite3_column_int64(s, 15);
}

/* The runs a filter takes, as SQL over runs r with ?1 the device and ?2 the bundle hash. */
static const char run_filter[] =
    "(?1 IS NULL OR instr(r.device, ?1) > 0 OR instr(r.hal, ?1) > 0) AND "
    "(?2 IS NULL OR substr(r.bundle_hash, 1, length(?2)) = ?2)";

static int bind_filter(sqlite3_stmt *s, const xr_history_filter_t *f) {
  const char *values[] = {f ? f->device : NULL, f ? f->bundle_hash : NULL,
                          f ? f->op_filter : NULL};
  int rc = SQLITE_OK;
  for (int k = 0; rc == SQLITE_OK && k < sqlite3_bind_parameter_count(s) && k < 3; k++)
    rc = values[k] ? sqlite3_bind_text(s, k + 1, values[k], -1, SQLITE_STATIC)
                   : sqlite3_bind_null(s, k + 1);
  return rc;
}

xr_status_t xr_history_runs(xr_history_t *h, const xr_history_filter_t *filter,
                            bool (*fn)(void *context, const xr_history_run_t *run),
                            void *context) {
  if (h->empty) return XR_OK;
  char sql[2048];
  snprintf(sql, sizeof sql, "SELECT %s FROM runs r WHERE %s ORDER BY r.date, r.id", run_columns,
           run_filter);
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) rc = bind_filter(s, filter);
  while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    xr_history_run_t run;
    read_run(s, &run);
    rc = fn(context, &run) ? SQLITE_OK : SQLITE_DONE;
  }
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? XR_OK : db_error(h, rc, "listing its runs");
}

xr_status_t xr_history_results(xr_history_t *h, const xr_history_filter_t *filter,
                               bool (*fn)(void *context, const xr_history_result_t *result),
                               void *context) {
  if (h->empty) return XR_OK;
  /* k: the op's rank among its run's ops of one signature, so that the k-th of a signature in
   * one bundle is the k-th in another (report_compare.h); within a bundle, one position. */
  char list[512], sql[4096];
  column_list("c.", list, sizeof list);
  snprintf(sql, sizeof sql,
           "WITH keyed AS (SELECT s.*, row_number() OVER (PARTITION BY s.run, s.name, s.args "
           "ORDER BY s.op_index, s.position) AS k FROM results s), "
           "chosen AS (SELECT keyed.*, min(keyed.op_index) OVER (PARTITION BY keyed.name, "
           "keyed.args, keyed.k) AS first_index FROM keyed JOIN runs r ON r.id = keyed.run "
           "WHERE %s AND (?3 IS NULL OR instr(keyed.name, ?3) > 0)) "
           "SELECT %s, %s, dense_rank() OVER (ORDER BY c.first_index, c.name, c.args, c.k) "
           "FROM chosen c JOIN runs r ON r.id = c.run "
           "ORDER BY c.first_index, c.name, c.args, c.k, r.date, r.id",
           run_filter, run_columns, list);
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) rc = bind_filter(s, filter);
  xr_report_entry_t *e = malloc(sizeof *e);
  if (!e) rc = SQLITE_NOMEM;
  while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    xr_history_run_t run;
    read_run(s, &run);
    clear_entry(e);
    for (size_t k = 0; k < COLUMN_COUNT; k++)
      read_result(s, RUN_COLUMN_COUNT + (int)k, &columns[k], e);
    xr_history_result_t r = {
        .op = (size_t)sqlite3_column_int64(s, RUN_COLUMN_COUNT + (int)COLUMN_COUNT) - 1,
        .run = &run,
        .entry = e};
    rc = fn(context, &r) ? SQLITE_OK : SQLITE_DONE;
  }
  free(e);
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? XR_OK : db_error(h, rc, "listing its results");
}

/* "runs 1 to 7", or "no runs", for messages about a run that is not there. */
static void describe_ids(xr_history_t *h, char *out, size_t size) {
  int64_t lo = 0, hi = 0;
  if (h->empty || query_int(h, "SELECT coalesce(min(id), 0) FROM runs", &lo) != XR_OK ||
      query_int(h, "SELECT coalesce(max(id), 0) FROM runs", &hi) != XR_OK || hi == 0)
    snprintf(out, size, "it holds no runs");
  else if (lo == hi)
    snprintf(out, size, "it holds run %lld alone", (long long)lo);
  else
    snprintf(out, size, "it holds runs %lld to %lld", (long long)lo, (long long)hi);
}

xr_status_t xr_history_latest(xr_history_t *h, int64_t *out_run) {
  int64_t id = 0;
  xr_status_t st = h->empty ? XR_OK : query_int(h, "SELECT coalesce(max(id), 0) FROM runs", &id);
  if (st != XR_OK) return st;
  if (id == 0) return xr_error(XR_NOT_FOUND, "%s: no run recorded yet", h->path);
  *out_run = id;
  return XR_OK;
}

/* The run's header and ops as a JSON report, as the run wrote it (less what is not kept). */
static xr_status_t run_json(xr_history_t *h, int64_t id, cJSON *report) {
  char sql[2048];
  snprintf(sql, sizeof sql, "SELECT %s FROM runs r WHERE r.id = ?", run_columns);
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 1, id);
  if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_DONE) {
    sqlite3_finalize(s);
    char ids[64];
    describe_ids(h, ids, sizeof ids);
    return xr_error(XR_NOT_FOUND, "%s: no run %lld (%s)", h->path, (long long)id, ids);
  }
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(s);
    return db_error(h, rc, "reading a run");
  }
  xr_history_run_t run;
  read_run(s, &run);
  cJSON_AddNumberToObject(report, "xreplay_report", XR_REPORT_VERSION);
  const char *keys[] = {"bundle", "bundle_hash", "date", "hal", "device", "driver",
                        "driver_version", "runtime_version"};
  const char *values[] = {run.bundle, run.bundle_hash, run.date,           run.hal,
                          run.device, run.driver,      run.driver_version, run.runtime_version};
  for (int k = 0; k < 8; k++) cJSON_AddStringToObject(report, keys[k], values[k]);
  cJSON *options = cJSON_Parse(run.options);
  if (options) cJSON_AddItemToObject(report, "options", options);
  if (run.finished)
    cJSON_AddBoolToObject(cJSON_AddObjectToObject(report, "summary"), "cancelled", run.cancelled);
  sqlite3_finalize(s);

  char list[512];
  column_list("", list, sizeof list);
  snprintf(sql, sizeof sql, "SELECT %s FROM results WHERE run = ? ORDER BY position", list);
  cJSON *ops = cJSON_AddArrayToObject(report, "ops");
  xr_report_entry_t *e = malloc(sizeof *e);
  rc = e && ops ? sqlite3_prepare_v2(h->db, sql, -1, &s, NULL) : SQLITE_NOMEM;
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(s, 1, id);
  while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    clear_entry(e);
    for (size_t k = 0; k < COLUMN_COUNT; k++) read_result(s, (int)k, &columns[k], e);
    cJSON *op = entry_json(e);
    rc = op && cJSON_AddItemToArray(ops, op) ? SQLITE_OK : SQLITE_NOMEM;
  }
  free(e);
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? XR_OK : db_error(h, rc, "reading a run's results");
}

xr_status_t xr_history_report(xr_history_t *h, int64_t run,
                              xr_report_contents_t **out_contents) {
  *out_contents = NULL;
  if (h->empty) return xr_error(XR_NOT_FOUND, "%s: no run %lld (it holds no runs)", h->path,
                                (long long)run);
  cJSON *report = cJSON_CreateObject();
  if (!report) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", h->path);
  /* Read inside one transaction: a run recorded meanwhile is not half seen. */
  xr_status_t st = exec(h, "BEGIN", "reading a run");
  if (st == XR_OK) {
    st = run_json(h, run, report);
    sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
  }
  if (st != XR_OK) {
    cJSON_Delete(report);
    return st;
  }
  char name[4200];
  snprintf(name, sizeof name, "%s: run %lld", h->path, (long long)run);
  return xr_report_from_json(report, name, out_contents);
}
