/* The history of runs on the command line: `replay --db=FILE` records each run in a SQLite
 * database, `replay history` lists each op's medians across runs, `replay regress` judges a run
 * against a baseline run. The database is checked with SQLite's own command-line tool, never
 * through our code: the runs and results a replay recorded against the report it wrote, runs
 * recorded by six processes at once, a process killed with SIGKILL while it writes (the
 * preloaded tests/tools/kill_on_wal_write.c), and each mistake as one line with exit 2. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define BUNDLE "tests/data/bundles/history_small.json"
#define QUICK "--hal=cpu --iters=5 --warmup=0"

/* `sqlite3 DB "QUERY"`'s output, trailing newline removed; fails the test when it fails. */
static const char *sql(const char *db, const char *query) {
  static char text[1 << 16];
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "sqlite3 -batch '%s' \"%s\" 2>&1", db, query);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "cannot run sqlite3");
  size_t n = fread(text, 1, sizeof text - 1, p);
  text[n] = '\0';
  int status = pclose(p);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "sqlite3 %s \"%s\" failed (./bazelw installs sqlite3):\n%s", db, query, text);
  while (n && text[n - 1] == '\n') text[--n] = '\0';
  return text;
}

static long sql_long(const char *db, const char *query) {
  const char *text = sql(db, query);
  char *end;
  long v = strtol(text, &end, 10);
  cr_assert(end != text && !*end, "sqlite3 %s \"%s\": not a number: %s", db, query, text);
  return v;
}

/* Runs the bundle once into `db`; returns the run id it printed. */
static long record(const char *db, const char *bundle, const char *extra) {
  char args[4096];
  snprintf(args, sizeof args, QUICK " %s --db=%s %s", extra, db, bundle);
  cr_assert_eq(replay(args), 0, "replay %s:\n%s%s", args, out_text, err_text);
  const char *at = strstr(out_text, "recorded run ");
  cr_assert_not_null(at, "replay %s did not say what it recorded:\n%s", args, out_text);
  long id = strtol(at + strlen("recorded run "), NULL, 10);
  cr_assert(strstr(at, db), "replay %s named another file:\n%s", args, at);
  return id;
}

/* Runs whose results are all there: runs.ops results each. */
static long whole_runs(const char *db) {
  return sql_long(db, "SELECT count(*) FROM runs WHERE ops = "
                      "(SELECT count(*) FROM results WHERE run = runs.id)");
}

/* One line on stderr, saying `what`, with exit 2. */
static void expect_error(const char *args, const char *what) {
  cr_assert_eq(replay(args), 2, "replay %s: want exit 2\n%s%s", args, out_text, err_text);
  cr_assert(strstr(err_text, what), "replay %s: want \"%s\" in:\n%s", args, what, err_text);
  const char *nl = strchr(err_text, '\n');
  cr_assert(nl && !nl[1], "replay %s: want one line:\n%s", args, err_text);
}

/* ------------------------------------------------------------------------------------------ */
/* recording                                                                                   */

/* Each run's row and its ops' rows hold what the run's own report says. */
Test(history, records_each_run_as_its_report_says) {
  const char *db = scratch("h.db");
  for (int run = 1; run <= 2; run++) {
    char extra[1200];
    const char *report = scratch(run == 1 ? "r1.json" : "r2.json");
    snprintf(extra, sizeof extra, "--report=%s", report);
    cr_assert_eq(record(db, BUNDLE, extra), run);
    cJSON *r = read_json(report);
    char q[1024];
    snprintf(q, sizeof q,
             "SELECT date, bundle, bundle_hash, hal, device, driver, driver_version, "
             "runtime_version, finished, cancelled, ops FROM runs WHERE id = %d",
             run);
    char want[4096];
    snprintf(want, sizeof want, "%s|%s|%s|%s|%s|%s|%s|%s|1|0|4", json_str(r, "date"),
             json_str(r, "bundle"), json_str(r, "bundle_hash"), json_str(r, "hal"),
             json_str(r, "device"), json_str(r, "driver"), json_str(r, "driver_version"),
             json_str(r, "runtime_version"));
    cr_assert_str_eq(sql(db, q), want);
    char host[HOST_NAME_MAX + 1] = "";
    gethostname(host, sizeof host);
    snprintf(q, sizeof q, "SELECT host FROM runs WHERE id = %d", run);
    cr_assert_str_eq(sql(db, q), host);
    snprintf(q, sizeof q, "SELECT json_extract(options, '$.iters') FROM runs WHERE id = %d", run);
    cr_assert_eq(sql_long(db, q), 5);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(r, "ops"), *op;
    int position = 0;
    cJSON_ArrayForEach(op, ops) {
      snprintf(q, sizeof q,
               "SELECT op_index, name, args, outcome, kernel, count, iterations, contended, "
               "samples_us FROM results WHERE run = %d AND position = %d",
               run, position);
      cJSON *samples = cJSON_GetObjectItemCaseSensitive(op, "samples_us");
      char *samples_text = cJSON_PrintUnformatted(samples);
      const cJSON *contention = cJSON_GetObjectItemCaseSensitive(op, "contention");
      snprintf(want, sizeof want, "%d|%s|%s|ok|%s|1.0|5|%d|%s", (int)json_number(op, "index"),
               json_str(op, "name"), json_str(op, "args"), json_str(op, "kernel"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(contention, "contended")),
               samples_text);
      free(samples_text);
      cr_assert_str_eq(sql(db, q), want, "run %d, op %d", run, position);
      /* The CLI prints 15 digits: the figures compared as numbers. */
      const char *figures[] = {"median_us", "min_us", "p10_us", "p90_us", "iqr_us",
                               "noise_percent"};
      for (int k = 0; k < 6; k++) {
        snprintf(q, sizeof q, "SELECT %s FROM results WHERE run = %d AND position = %d",
                 figures[k], run, position);
        const char *got = sql(db, q);
        double expected = json_number(op, figures[k]); /* absent: NULL, printed "" */
        cr_assert(isnan(expected) ? !got[0]
                                  : fabs(strtod(got, NULL) - expected) <= 1e-12 * fabs(expected),
                  "run %d, op %d: %s %s, the report's %.17g", run, position, figures[k], got,
                  expected);
      }
      position++;
    }
    cr_assert_eq(position, 4);
    cJSON_Delete(r);
  }
  cr_assert_eq(sql_long(db, "SELECT count(*) FROM results"), 8);
  cr_assert_eq(whole_runs(db), 2);
  cr_assert_str_eq(sql(db, "PRAGMA journal_mode"), "wal");
  cr_assert_str_eq(sql(db, "PRAGMA integrity_check"), "ok");
}

/* ------------------------------------------------------------------------------------------ */
/* replay history                                                                              */

/* Each op once, with one line per run, oldest first (by date): the two ops of one signature
 * apart, each line with the run's kernel, device, driver and library versions. */
Test(history, lists_each_op_across_runs_oldest_first) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  record(db, BUNDLE, "");
  /* Run 1 dated after run 2: the order is the dates', not the ids'. */
  sql(db, "UPDATE runs SET date = '2099-01-01T00:00:00Z' WHERE id = 1");
  char args[1200];
  snprintf(args, sizeof args, "history --db=%s", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  const char *heads[] = {
      "#0 aten::add self=f32[64] other=f32[64]\n", "#1 aten::mm self=f32[16,8] mat2=f32[8,8]\n",
      "#2 aten::relu self=f32[256]\n", "#3 aten::add self=f32[64] other=f32[64]\n"};
  const char *at[5];
  for (int k = 0; k < 4; k++) {
    at[k] = strstr(out_text, heads[k]);
    cr_assert_not_null(at[k], "no \"%s\" in:\n%s", heads[k], out_text);
    cr_assert(k == 0 || at[k] > at[k - 1], "ops out of order:\n%s", out_text);
  }
  at[4] = out_text + strlen(out_text);
  /* "cpu · AMD EPYC (cpu Linux 6.1 x86_64; glibc 2.36)" */
  char want[2048];
  snprintf(want, sizeof want, "%s",
           sql(db, "SELECT hal || ' \u00b7 ' || device || ' (' || driver || ' ' || "
                   "driver_version || '; ' || runtime_version || ')' FROM runs WHERE id = 2"));
  for (int k = 0; k < 4; k++) {
    char block[8192];
    snprintf(block, sizeof block, "%.*s", (int)(at[k + 1] - at[k]), at[k]);
    const char *two = strstr(block, "\n     2  "), *one = strstr(block, "\n     1  2099-01-01");
    cr_assert(two && one && two < one, "op %d: want run 2, then run 1 (dated later):\n%s", k,
              block);
    char q[256];
    snprintf(q, sizeof q, "SELECT kernel FROM results WHERE run = 2 AND position = %d", k);
    cr_assert(strstr(block, sql(db, q)), "op %d: no kernel in:\n%s", k, block);
    cr_assert(strstr(block, want), "op %d: want \"%s\" in:\n%s", k, want, block);
    /* Rounded here as the tool rounds it (SQLite's printf rounds its own way). The sqlite3
     * shell prints 15 digits: a median on a rounding tie (0.405 stored as 0.40499999...) may
     * read back just above it, so either neighbour of the tie is the tool's. */
    snprintf(q, sizeof q, "SELECT median_us FROM results WHERE run = 2 AND position = %d", k);
    char below[64], above[64];
    double median = strtod(sql(db, q), NULL);
    snprintf(below, sizeof below, " %.2f ", median * (1 - 1e-12));
    snprintf(above, sizeof above, " %.2f ", median * (1 + 1e-12));
    cr_assert(strstr(block, below) || strstr(block, above), "op %d: no median%sin:\n%s", k, below,
              block);
  }
  cr_assert(strstr(out_text, "4 ops, 8 results"), "%s", out_text);

  /* --op-filter, --device and --bundle take as they say. */
  snprintf(args, sizeof args, "history --db=%s --op-filter=mm", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, heads[1]) && !strstr(out_text, "aten::add"), "%s", out_text);
  snprintf(args, sizeof args, "history --db=%s --device=cpu --bundle=%.6s", db,
           sql(db, "SELECT bundle_hash FROM runs WHERE id = 1"));
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, "4 ops, 8 results"), "%s", out_text);
  snprintf(args, sizeof args, "history --db=%s --device=no-such-device", db);
  expect_error(args, "no op of the runs recorded matches --device=no-such-device");
  snprintf(args, sizeof args, "history --db=%s --bundle=0123", db);
  expect_error(args, "matches --bundle=0123");

  /* --runs: the ids regress takes, each with its run's facts. */
  snprintf(args, sizeof args, "history --db=%s --runs", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  const char *r2 = strstr(out_text, "\n    2  "), *r1 = strstr(out_text, "\n    1  2099");
  cr_assert(r1 && r2 && r2 < r1, "want runs 2 and 1 in date order:\n%s", out_text);
  cr_assert(strstr(r2, sql(db, "SELECT bundle_hash FROM runs WHERE id = 2")), "%s", out_text);
  cr_assert(strstr(r2, "4 ops"), "%s", out_text);
}

/* Ops of different bundles are one op where compare would pair them: by name and arguments. */
Test(history, pairs_ops_of_other_bundles_by_signature) {
  const char *db = scratch("h.db"), *other = scratch("other.json");
  /* The same ops but the relu, which is first here and wider: another bundle_hash. */
  write_text(other,
             "{\"format\": \"xreplay-bundle\", \"ops\": ["
             "{\"name\": \"aten::relu\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
             "\"value\": {\"shape\": [512], \"dtype\": \"float\"}}]}, "
             "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
             "\"value\": {\"shape\": [16, 8], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "
             "\"type\": \"Tensor\", \"value\": {\"shape\": [8, 8], \"dtype\": \"float\"}}]}]}");
  record(db, BUNDLE, "");
  record(db, other, "");
  cr_assert_neq(sql_long(db, "SELECT count(DISTINCT bundle_hash) FROM runs"), 1);
  char args[1200];
  snprintf(args, sizeof args, "history --db=%s", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  /* The mm: #1 of the first bundle and #1 of the other, one op with two runs; the relus are
   * two ops of different shapes. */
  cr_assert(strstr(out_text, "5 ops, 6 results"), "%s", out_text);
  const char *mm = strstr(out_text, "#1 aten::mm");
  cr_assert_not_null(mm, "%s", out_text);
  cr_assert(strstr(mm, "\n     1  ") && strstr(mm, "\n     2  "), "%s", out_text);
  char tag[128];
  snprintf(tag, sizeof tag, "[#1 of bundle %s]",
           sql(db, "SELECT bundle_hash FROM runs WHERE id = 2"));
  /* Same position, another bundle: the line says which. */
  cr_assert(strstr(mm, tag), "want \"%s\" in:\n%s", tag, out_text);
}

/* ------------------------------------------------------------------------------------------ */
/* replay regress                                                                              */

/* Two runs of one bundle at a generous tolerance: nothing is SLOWER, exit 0. */
Test(history, regress_passes_two_runs_of_one_bundle) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  record(db, BUNDLE, "");
  char args[1200];
  snprintf(args, sizeof args, "regress --db=%s --baseline=1 --tolerance=400%%", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, "one bundle ("), "%s", out_text);
  cr_assert(strstr(out_text, "0 of 4 ops timed in both runs got slower beyond 400%"), "%s",
            out_text);
  cr_assert_null(strstr(out_text, "SLOWER #"), "%s", out_text);
}

/* Sets an op's timing in a run: `median` with five tight samples around it, uncontended. */
static void set_timing(const char *db, int run, int position, double median) {
  char q[1024];
  snprintf(q, sizeof q,
           "UPDATE results SET median_us = %g, min_us = %g, p10_us = %g, p90_us = %g, "
           "iqr_us = %g, noise_percent = 0.5, contended = 0, unstable = 0, "
           "samples_us = '[%g,%g,%g,%g,%g]' WHERE run = %d AND position = %d",
           median, median * 0.99, median * 0.99, median * 1.01, median * 0.01, median,
           median * 0.99, median * 1.01, median * 0.995, median * 1.005, run, position);
  sql(db, q);
}

/* An op made twice as slow, with tight samples, is SLOWER and the exit is 1; the other way
 * round it is faster, not a regression; and a tolerance above 100% lets it pass. */
Test(history, regress_flags_an_op_twice_as_slow) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  record(db, BUNDLE, "");
  set_timing(db, 1, 1, 10.0);
  set_timing(db, 2, 1, 20.0);
  char args[1200];
  snprintf(args, sizeof args, "regress --db=%s --baseline=1", db); /* --run: the latest, 2 */
  cr_assert_eq(replay(args), 1, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, "run:      run 2,"), "%s", out_text);
  const char *line = strstr(out_text, "SLOWER #1 aten::mm self=f32[16,8] mat2=f32[8,8]: "
                                      "10.00 -> 20.00 us, x2.000 the baseline's time");
  cr_assert_not_null(line, "%s", out_text);
  cr_assert(strstr(line, "threshold 5%)"), "%s", out_text);
  cr_assert(strstr(out_text, "1 of 4 ops timed in both runs got slower beyond 5%"), "%s",
            out_text);
  /* Only the mm: the others' lines are not printed. */
  cr_assert_null(strstr(line + 1, "SLOWER #"), "%s", out_text);

  snprintf(args, sizeof args, "regress --db=%s --baseline=2 --run=1", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert_null(strstr(out_text, "SLOWER #"), "%s", out_text);
  cr_assert(strstr(out_text, "1 FASTER"), "%s", out_text);

  /* x2 is within a 150% tolerance (x2.5): the threshold is the verdict's. */
  snprintf(args, sizeof args, "regress --db=%s --baseline=1 --run=2 --tolerance=150", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert_null(strstr(out_text, "SLOWER #"), "%s", out_text);
}

/* ------------------------------------------------------------------------------------------ */
/* several writers, and one killed                                                             */

/* Six replays record at once into a new file, all held back by another process's write lock
 * until it lets go: six whole runs, ids 1 to 6. */
Test(history, six_writers_at_once_record_six_whole_runs) {
  const char *db = scratch("h.db"), *dir = scratch("writers");
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s && ((echo 'BEGIN IMMEDIATE;'; sleep 3; echo 'COMMIT;') | sqlite3 %s) & "
           "sleep 0.5; for i in 1 2 3 4 5 6; do (tools/replay " QUICK " --db=%s " BUNDLE
           " >%s/out.$i 2>&1; echo $? >%s/rc.$i) & done; wait",
           dir, db, db, dir, dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  for (int i = 1; i <= 6; i++) {
    char path[1200], text[8192];
    snprintf(path, sizeof path, "%s/out.%d", dir, i);
    slurp(path, text, sizeof text);
    cr_assert(strstr(text, "recorded run "), "writer %d:\n%s", i, text);
    snprintf(path, sizeof path, "%s/rc.%d", dir, i);
    slurp(path, text, sizeof text);
    cr_assert_str_eq(text, "0\n", "writer %d's exit code", i);
  }
  cr_assert_str_eq(sql(db, "PRAGMA integrity_check"), "ok");
  cr_assert_str_eq(sql(db, "SELECT group_concat(id) FROM (SELECT id FROM runs ORDER BY id)"),
                   "1,2,3,4,5,6");
  cr_assert_eq(whole_runs(db), 6);
  cr_assert_eq(sql_long(db, "SELECT count(*) FROM results"), 24);
  cr_assert_str_eq(sql(db, "PRAGMA journal_mode"), "wal");
}

/* `replay --db=DB BUNDLE` killed with SIGKILL halfway through its `n`-th write to the WAL. */
static void record_killed(const char *db, int n) {
  char preload[PATH_MAX], at[16], db_arg[1200];
  cr_assert_not_null(realpath("tests/tools/libkill_on_wal_write.so", preload));
  snprintf(at, sizeof at, "%d", n);
  snprintf(db_arg, sizeof db_arg, "--db=%s", db);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    setenv("LD_PRELOAD", preload, 1);
    setenv("XR_KILL_AT_WAL_WRITE", at, 1);
    /* Under --config=asan the sanitizer's runtime must come first; the preload is ours. */
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execl("tools/replay", "replay", "--hal=cpu", "--iters=5", "--warmup=0", db_arg, BUNDLE,
          (char *)NULL);
    _exit(127);
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
            "replay was not killed while writing the WAL (status 0x%x)", status);
  /* Killed inside the transaction: its pages are in the WAL, no commit among them. */
  char wal[1200];
  snprintf(wal, sizeof wal, "%s-wal", db);
  struct stat info;
  cr_assert(stat(wal, &info) == 0 && info.st_size > 0, "%s: no pages left behind", wal);
}

/* Killed while recording its run: the database is whole and holds the run before it alone,
 * and the next run records as if nothing happened. */
Test(history, killed_writer_leaves_only_whole_runs) {
  const char *db = scratch("h.db");
  cr_assert_eq(record(db, BUNDLE, ""), 1);
  /* The fifth write: the run's row and some results are in the WAL, the commit is not. */
  record_killed(db, 5);
  cr_assert_str_eq(sql(db, "PRAGMA integrity_check"), "ok");
  cr_assert_eq(sql_long(db, "SELECT count(*) FROM runs"), 1);
  cr_assert_eq(whole_runs(db), 1);
  cr_assert_eq(sql_long(db, "SELECT count(*) FROM results"), 4);
  cr_assert_eq(record(db, BUNDLE, ""), 2);
  cr_assert_eq(whole_runs(db), 2);
  char args[1200];
  snprintf(args, sizeof args, "history --db=%s", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, "4 ops, 8 results"), "%s", out_text);
}

/* Killed while making the tables of a new file: no tables, a history with no runs, and the
 * next run makes them. */
Test(history, killed_first_writer_leaves_an_empty_database) {
  const char *db = scratch("h.db");
  record_killed(db, 3);
  cr_assert_str_eq(sql(db, "PRAGMA integrity_check"), "ok");
  cr_assert_eq(sql_long(db, "SELECT count(*) FROM sqlite_master"), 0);
  char args[1200];
  snprintf(args, sizeof args, "history --db=%s", db);
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, "no run recorded yet"), "%s", out_text);
  cr_assert_eq(record(db, BUNDLE, ""), 1);
  cr_assert_eq(whole_runs(db), 1);
}

/* ------------------------------------------------------------------------------------------ */
/* mistakes: one line naming the file and the problem, exit 2                                  */

Test(history, a_file_that_is_not_sqlite) {
  const char *notdb = scratch("notes.txt");
  write_text(notdb, "not a database\n");
  const char *forms[] = {"history --db=%s", "regress --db=%s --baseline=1",
                         QUICK " --db=%s " BUNDLE};
  for (int k = 0; k < 3; k++) {
    char args[1200], what[1200];
    snprintf(args, sizeof args, forms[k], notdb);
    snprintf(what, sizeof what, "%s: not a SQLite database", notdb);
    expect_error(args, what);
    cr_assert_null(strstr(out_text, "== cpu"), "replay ran before saying so:\n%s", out_text);
  }
  char text[64];
  slurp(notdb, text, sizeof text);
  cr_assert_str_eq(text, "not a database\n", "the file was changed");
}

Test(history, another_programs_database_is_left_alone) {
  const char *db = scratch("notes.db");
  sql(db, "CREATE TABLE notes (text TEXT)");
  const char *forms[] = {"history --db=%s", "regress --db=%s --baseline=1",
                         QUICK " --db=%s " BUNDLE};
  for (int k = 0; k < 3; k++) {
    char args[1200], what[1200];
    snprintf(args, sizeof args, forms[k], db);
    snprintf(what, sizeof what, "%s: not an xreplay history: a SQLite database of another "
                                "program (application_id 0; tables notes)", db);
    expect_error(args, what);
  }
  cr_assert_str_eq(sql(db, "PRAGMA journal_mode"), "delete");
  cr_assert_str_eq(sql(db, "SELECT name FROM sqlite_master"), "notes");
}

Test(history, a_later_schema_is_refused) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  sql(db, "PRAGMA user_version = 9");
  char args[1200], what[1200];
  snprintf(args, sizeof args, "history --db=%s --runs", db);
  snprintf(what, sizeof what, "%s: a history of schema 9, from a later xreplay", db);
  expect_error(args, what);
}

/* A run that is not there is named, with how to list those that are. */
Test(history, a_missing_run) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  record(db, BUNDLE, "");
  char args[1200], what[1200];
  snprintf(args, sizeof args, "regress --db=%s --baseline=9", db);
  snprintf(what, sizeof what,
           "replay regress: %s: no run 9 (it holds runs 1 to 2); `replay history --db=%s "
           "--runs` lists them\n",
           db, db);
  expect_error(args, what);
  snprintf(args, sizeof args, "regress --db=%s --baseline=1 --run=3", db);
  expect_error(args, "no run 3 (it holds runs 1 to 2)");
}

Test(history, a_missing_file) {
  const char *db = scratch("missing.db");
  char args[1200], what[1200];
  snprintf(what, sizeof what, "%s: cannot open: No such file or directory", db);
  snprintf(args, sizeof args, "history --db=%s", db);
  expect_error(args, what);
  snprintf(args, sizeof args, "regress --db=%s --baseline=1", db);
  expect_error(args, what);
  cr_assert_neq(access(db, F_OK), 0, "reading made the file");
  snprintf(args, sizeof args, QUICK " --db=%s/no-such-dir/h.db " BUNDLE, tmpdir());
  expect_error(args, "no-such-dir/h.db: cannot open");
}

Test(history, usage_mistakes) {
  const char *db = scratch("h.db");
  record(db, BUNDLE, "");
  struct {
    const char *args, *what;
  } cases[] = {
      {"regress --baseline=1", "replay regress: --db=FILE is required"},
      {"regress --db=%s", "replay regress: --baseline=RUN is required (`replay history --db="},
      {"regress --db=%s --baseline=x", "--baseline=x: not a run id"},
      {"regress --db=%s --baseline=1 --run=0", "--run=0: not a run id"},
      {"regress --db=%s --baseline=1 --tolerance=0", "--tolerance=0: not a percentage above 0"},
      {"regress --db=%s --baseline=1 --tolerance=5%%x", "--tolerance=5%x: not a percentage"},
      {"regress --db=%s --baseline=1 --treshold=5", "unknown option --treshold=5"},
      {"history", "replay history: --db=FILE is required"},
      {"history %s", "takes no operand (the database is --db=FILE)"},
      {"history --db=%s --bundle=XYZ", "--bundle=XYZ: not a bundle hash"},
      {"history --db=%s --runs --op-filter=mm", "--op-filter does not apply"},
      {"history --db=%s --op-filter=zzz", "no op of the runs recorded matches --op-filter=zzz"},
      {"history --db=%s --run", "unknown option --run (did you mean --runs?)"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char args[1200];
    snprintf(args, sizeof args, cases[k].args, db);
    expect_error(args, cases[k].what);
  }
}
