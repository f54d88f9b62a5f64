/* The HTML report (`replay report`, `replay --html`) in a real browser. Headless Chromium loads
 * each page from disk; the DOM it renders must hold a row for every op of every report (its
 * name as the report spells it, the reason of an op that did not run), a roofline point for
 * every op with FLOPs and a time, a ceiling for every peak the report gives and its source in
 * the legend; nothing may be fetched from the network (no external src/href in the DOM, no
 * request from the page in Chromium's net log); the page's script must have run; and a
 * screenshot of it must not be blank. Expected values come from the reports themselves, read
 * here with cJSON. Every case skips, saying why, where Chromium cannot start. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/tools/cli_util.h"

#define EXAMPLE "examples/llm_small.msgpack"

/* ------------------------------------------------------------------------------------------ */
/* files                                                                                       */

static char *read_all(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!buf) return NULL;
  buf[got] = '\0';
  if (out_size) *out_size = got;
  return buf;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* The text as the DOM serialises it (HTML's serialisation of a text node): & < > escaped. */
static void text_of(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; *s && k + 6 < n; s++) {
    const char *r = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : NULL;
    if (r)
      k += (size_t)snprintf(out + k, n - k, "%s", r);
    else
      out[k++] = *s;
  }
  out[k] = '\0';
}

/* ------------------------------------------------------------------------------------------ */
/* the browser                                                                                 */

/* Runs headless Chromium on `url` with `what` (--dump-dom, --screenshot=...), its profile and
 * HOME under the test's scratch directory, host names resolving nowhere and a net log;
 * stdout to `out`. Returns the exit status. */
static int chromium(const char *url, const char *what, const char *out, const char *netlog) {
  static int runs;
  char profile[1024], cmd[8192];
  snprintf(profile, sizeof profile, "%s/chromium.%d.%d", tmpdir(), (int)getpid(), runs++);
  mkdir(profile, 0700);
  snprintf(cmd, sizeof cmd,
           "HOME=%s timeout 60 chromium --headless --no-sandbox --disable-gpu --no-first-run "
           "--disable-background-networking --disable-component-update --disable-sync "
           "--disable-extensions --hide-scrollbars '--host-resolver-rules=MAP * ~NOTFOUND' "
           "--user-data-dir=%s/profile --log-net-log=%s %s '%s' >%s 2>%s/stderr",
           profile, profile, netlog, what, url, out, profile);
  int status = system(cmd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char err[4096], path[1100];
    snprintf(path, sizeof path, "%s/stderr", profile);
    slurp(path, err, sizeof err);
    cr_log_info("chromium %s %s: exit %d: %s", what, url, WEXITSTATUS(status), err);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Skips the test, with the reason, when Chromium cannot render a page here. */
static void need_chromium(void) {
  const char *out = scratch("blank.dom");
  int rc = chromium("about:blank", "--dump-dom", out, scratch("blank.netlog"));
  char dom[4096];
  slurp(out, dom, sizeof dom);
  if (rc == 127)
    cr_skip_test("chromium is not installed (./bazelw installs Debian's chromium package)");
  if (rc != 0 || !strstr(dom, "<html"))
    cr_skip_test("chromium cannot start here (exit %d; its stderr is in the test log)", rc);
}

/* The DOM of `page` after loading and running its script; `netlog` gets Chromium's net log. */
static char *render(const char *page, const char *netlog) {
  char url[2048];
  snprintf(url, sizeof url, "file://%s", page);
  const char *out = scratch("dom");
  cr_assert_eq(chromium(url, "--dump-dom", out, netlog), 0, "chromium --dump-dom %s", page);
  char *dom = read_all(out, NULL);
  cr_assert(dom && strstr(dom, "</html>"), "no DOM from chromium for %s", page);
  return dom;
}

static double source_id(const cJSON *event) {
  const cJSON *id = cJSON_GetObjectItem(cJSON_GetObjectItem(event, "source"), "id");
  return cJSON_IsNumber(id) ? id->valuedouble : -1;
}

/* What the page asked the network for. From the DOM: src or href attributes that are not
 * in-page anchors, stylesheet links, CSS url()s. From the net log: requests made on behalf of a
 * file:// page (their network isolation key is file://; Chromium's own background requests
 * have none) for anything but a file. Each one found is appended to `what`. */
static size_t fetches(const char *dom, const char *netlog_path, char *what, size_t n) {
  size_t found = 0, len = strlen(what);
#define FOUND(...)                                                           \
  do {                                                                       \
    found++;                                                                 \
    len += (size_t)snprintf(what + len, len < n ? n - len : 0, __VA_ARGS__); \
    if (len >= n) len = n - 1;                                               \
  } while (0)
  static const char *const attrs[] = {" src=\"",    " href=\"",   " xlink:href=\"",
                                      " srcset=\"", " poster=\"", " data=\""};
  for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
    for (const char *p = dom; (p = strstr(p, attrs[a])); p++) {
      const char *v = p + strlen(attrs[a]);
      if (*v != '#') FOUND("%s%.60s; ", attrs[a] + 1, v);
    }
  if (strstr(dom, "<link")) FOUND("a <link> element; ");
  if (strstr(dom, "url(")) FOUND("a CSS url(); ");
  if (strstr(dom, "@import")) FOUND("a CSS @import; ");
  char *log = read_all(netlog_path, NULL);
  cr_assert_not_null(log, "no net log at %s", netlog_path);
  cJSON *j = cJSON_Parse(log);
  free(log);
  /* A net log cut short (Chromium exits before closing it) still lists events one per line;
   * without a parse the check cannot be made, which is a failure, not a pass. */
  cr_assert_not_null(j, "chromium's net log %s is not JSON", netlog_path);
  const cJSON *events = cJSON_GetObjectItem(j, "events"), *e, *f;
  cJSON_ArrayForEach(e, events) {
    const cJSON *params = cJSON_GetObjectItem(e, "params");
    const cJSON *key = cJSON_GetObjectItem(params, "network_isolation_key");
    if (!cJSON_IsString(key) || strncmp(key->valuestring, "file://", 7)) continue;
    double id = source_id(e);
    cJSON_ArrayForEach(f, events) {
      const cJSON *url = cJSON_GetObjectItem(cJSON_GetObjectItem(f, "params"), "url");
      if (cJSON_IsString(url) && source_id(f) == id && strncmp(url->valuestring, "file:", 5) &&
          strncmp(url->valuestring, "data:", 5)) {
        FOUND("requested %.80s; ", url->valuestring);
        break;
      }
    }
  }
  cJSON_Delete(j);
#undef FOUND
  return found;
}

/* ------------------------------------------------------------------------------------------ */
/* the screenshot: a PNG decoded far enough to count its pixels                                */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* The share of pixels unlike the top-left one and the number of distinct colours (4 bits per
 * channel) of an 8-bit RGB or RGBA PNG, unfiltered row by row as the format says. */
static void png_stats(const char *path, double *out_share, size_t *out_colours) {
  size_t size;
  unsigned char *png = (unsigned char *)read_all(path, &size);
  cr_assert(png && size > 33 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8), "%s: not a PNG", path);
  uint32_t w = be32(png + 16), h = be32(png + 20);
  int depth = png[24], type = png[25], interlace = png[28];
  cr_assert(depth == 8 && (type == 2 || type == 6) && !interlace,
            "%s: a %d-bit PNG of colour type %d (interlace %d), not 8-bit RGB(A)", path, depth,
            type, interlace);
  size_t bpp = type == 6 ? 4 : 3, stride = (size_t)w * bpp;
  unsigned char *idat = malloc(size);
  size_t idat_size = 0;
  for (size_t at = 8; at + 12 <= size;) {
    uint32_t len = be32(png + at);
    cr_assert_leq(at + 12 + len, size, "%s: a chunk runs past the end", path);
    if (!memcmp(png + at + 4, "IDAT", 4)) {
      memcpy(idat + idat_size, png + at + 8, len);
      idat_size += len;
    }
    at += 12 + len;
  }
  uLongf raw_size = (uLongf)(h * (stride + 1));
  unsigned char *raw = malloc(raw_size);
  cr_assert_eq(uncompress(raw, &raw_size, idat, idat_size), Z_OK, "%s: IDAT does not inflate",
               path);
  cr_assert_eq(raw_size, (uLongf)(h * (stride + 1)), "%s: %lu bytes of pixels for %ux%u", path,
               (unsigned long)raw_size, w, h);
  static unsigned char seen[4096];
  memset(seen, 0, sizeof seen);
  size_t differ = 0, colours = 0;
  unsigned char bg[3] = {0};
  for (uint32_t y = 0; y < h; y++) {
    unsigned char *row = raw + y * (stride + 1), filter = row[0], *cur = row + 1;
    unsigned char *prev = y ? raw + (y - 1) * (stride + 1) + 1 : NULL;
    cr_assert_leq(filter, 4, "%s: row %u has filter %d", path, y, filter);
    for (size_t i = 0; i < stride; i++) {
      int a = i >= bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0;
      int c = prev && i >= bpp ? prev[i - bpp] : 0;
      int add = filter == 1   ? a
                : filter == 2 ? b
                : filter == 3 ? (a + b) / 2
                : filter == 4 ? paeth(a, b, c)
                              : 0;
      cur[i] = (unsigned char)(cur[i] + add);
    }
    for (uint32_t x = 0; x < w; x++) {
      const unsigned char *px = cur + x * bpp;
      if (!x && !y) memcpy(bg, px, 3);
      if (memcmp(px, bg, 3)) differ++;
      unsigned q = (unsigned)(px[0] >> 4) << 8 | (unsigned)(px[1] >> 4) << 4 | px[2] >> 4;
      if (!seen[q]) seen[q] = 1, colours++;
    }
  }
  free(raw);
  free(idat);
  free(png);
  *out_share = w && h ? (double)differ / ((double)w * h) : 0;
  *out_colours = colours;
}

static void screenshot(const char *page, const char *png) {
  char url[2048], what[1200];
  snprintf(url, sizeof url, "file://%s", page);
  snprintf(what, sizeof what, "--window-size=1400,2200 --screenshot=%s", png);
  cr_assert_eq(chromium(url, what, "/dev/null", scratch("shot.netlog")), 0,
               "chromium --screenshot");
}

/* Drawn, not blank: text, charts and the families' colours cover part of it. */
static void assert_not_blank(const char *page) {
  const char *png = scratch("png");
  screenshot(page, png);
  double share;
  size_t colours;
  png_stats(png, &share, &colours);
  cr_assert(share > 0.02 && colours >= 8,
            "the screenshot of %s looks blank: %.2f%% of pixels differ from the background, %zu "
            "colours",
            page, 100 * share, colours);
}

/* ------------------------------------------------------------------------------------------ */
/* what a page must show of its reports                                                        */

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}
static double number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The page's section of run `k` (its heading to its end), as a copy. */
static char *section(const char *dom, size_t k) {
  char open[64];
  snprintf(open, sizeof open, "<section class=\"run\" id=\"run-%zu\">", k);
  const char *a = strstr(dom, open);
  cr_assert_not_null(a, "no section for run %zu", k + 1);
  const char *b = strstr(a, "</section>");
  cr_assert_not_null(b);
  return strndup(a, (size_t)(b - a));
}

static void check_run(const char *sec, const char *report_path) {
  char *text = read_all(report_path, NULL);
  cr_assert_not_null(text, "%s", report_path);
  cJSON *j = cJSON_Parse(text);
  free(text);
  cr_assert_not_null(j, "%s is not JSON", report_path);
  char esc[8192], want[9000];
  /* The header: each field the report holds, as it holds it. */
  static const char *const head[] = {"bundle",          "hal", "device", "driver", "driver_version",
                                     "runtime_version", "date"};
  for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
    if (!str(j, head[k])) continue;
    text_of(str(j, head[k]), esc, sizeof esc);
    snprintf(want, sizeof want, "<dd>%s</dd>", esc);
    cr_assert(strstr(sec, want), "%s: the header lacks %s %s", report_path, head[k], want);
  }
  /* A row per op, with its name; the reason of one that did not run. */
  const cJSON *ops = cJSON_GetObjectItem(j, "ops"), *op;
  size_t n_ops = (size_t)cJSON_GetArraySize(ops), points = 0;
  cr_assert_eq(count(sec, "<tr class=\"op "), n_ops, "%s: %zu op rows for %zu ops", report_path,
               count(sec, "<tr class=\"op "), n_ops);
  cJSON_ArrayForEach(op, ops) {
    long long index = (long long)number(op, "index");
    text_of(str(op, "name"), esc, sizeof esc);
    snprintf(want, sizeof want,
             "<tr class=\"op %s\" data-index=\"%lld\"><td class=\"n\" data-v=\"%lld\">%lld</td>"
             "<td class=\"name\">%s</td>",
             str(op, "outcome"), index, index, index, esc);
    cr_assert(strstr(sec, want), "%s: no row %s", report_path, want);
    /* The command that slices the op out and replays it alone (plain paths: no quoting). */
    const char *row = strstr(sec, want), *row_end = strstr(row, "</tr>");
    text_of(str(j, "bundle") ? str(j, "bundle") : "", esc, sizeof esc);
    snprintf(want, sizeof want,
             "<td class=\"reproduce\"><code>replay slice %s --op=%lld -o op%lld.json &amp;&amp; "
             "replay --hal=%s op%lld.json</code></td>",
             esc, index, index, str(j, "hal") ? str(j, "hal") : "cpu", index);
    cr_assert(str(j, "bundle") && strstr(row, want) && strstr(row, want) < row_end,
              "%s: op %lld's row lacks %s", report_path, index, want);
    if (str(op, "message")) {
      text_of(str(op, "message"), esc, sizeof esc);
      cr_assert(strstr(sec, esc), "%s: op %lld's reason is not shown: %s", report_path, index, esc);
    }
    bool plotted = !strcmp(str(op, "outcome"), "ok") && number(op, "median_us") > 0 &&
                   number(op, "flops") > 0 && number(op, "bytes") > 0;
    snprintf(want, sizeof want, "<circle class=\"pt\" data-index=\"%lld\"", index);
    cr_assert_eq(strstr(sec, want) != NULL, plotted, "%s: op %lld %s on the roofline", report_path,
                 index, plotted ? "missing" : "wrongly");
    points += plotted;
  }
  cr_assert_eq(count(sec, "<circle class=\"pt\""), points, "%s: roofline points", report_path);
  /* A ceiling per figure the percentages use, its source in the legend; labelled log axes. */
  const cJSON *peaks = cJSON_GetObjectItem(j, "ceilings"), *p;
  const cJSON *bw = cJSON_GetObjectItem(peaks, "memory_bandwidth");
  const cJSON *flops = cJSON_GetObjectItem(peaks, "flops");
  size_t n_flops = (size_t)cJSON_GetArraySize(flops);
  cr_assert_eq(count(sec, "class=\"ceiling\" data-kind=\"memory\""), bw ? 1u : 0u, "%s",
               report_path);
  cr_assert_eq(count(sec, "class=\"ceiling\" data-kind=\"compute\""), n_flops, "%s", report_path);
  cr_assert_eq(count(sec, "<li class=\"ceiling-legend\">"), n_flops + (bw ? 1 : 0), "%s",
               report_path);
  cJSON_ArrayForEach(p, flops) {
    snprintf(want, sizeof want, "data-kind=\"compute\" data-dtype=\"%s\"", p->string);
    cr_assert(strstr(sec, want), "%s: no %s ceiling", report_path, p->string);
    snprintf(want, sizeof want, "%s peak ", p->string);
    const char *li = strstr(sec, want), *end = li ? strstr(li, "</li>") : NULL;
    const char *source = str(p, "source");
    snprintf(want, sizeof want, "(%s)", source ? source : "no source in the report");
    cr_assert(li && end && strstr(li, want) && strstr(li, want) < end,
              "%s: the legend does not give the %s peak's source %s", report_path, p->string, want);
  }
  if (bw) {
    snprintf(want, sizeof want, "memory bandwidth ");
    const char *li = strstr(sec, want);
    const char *source = str(bw, "source");
    snprintf(want, sizeof want, "(%s)", source ? source : "no source in the report");
    cr_assert(li && strstr(li, want), "%s: the bandwidth's source %s", report_path, want);
  }
  cr_assert_geq(count(sec, "class=\"xtick\""), 3, "%s", report_path);
  cr_assert_geq(count(sec, "class=\"ytick\""), 3, "%s", report_path);
  /* A run that wrote no summary says so. */
  bool partial = !cJSON_IsObject(cJSON_GetObjectItem(j, "summary"));
  cr_assert_eq(strstr(sec, "class=\"note partial\"") != NULL, partial, "%s: partial note",
               report_path);
  /* Doubtful timings are counted before anything else of the run: as many as the ops say. */
  size_t contended = 0, unstable = 0;
  cJSON_ArrayForEach(op, ops) {
    if (strcmp(str(op, "outcome"), "ok")) continue;
    contended +=
        cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(op, "contention"), "contended"));
    unstable += cJSON_IsTrue(cJSON_GetObjectItem(op, "unstable"));
  }
  if (contended || unstable) {
    snprintf(want, sizeof want,
             "Timings to doubt: %zu CONTENDED</b> (timed on a crowded host), <b>%zu UNSTABLE",
             contended, unstable);
    cr_assert(strstr(sec, want), "%s: no line %s", report_path, want);
  } else {
    cr_assert_null(strstr(sec, "Timings to doubt"), "%s", report_path);
  }
  cJSON_Delete(j);
}

/* Renders `page` and checks it against the reports it was made of; returns the DOM. */
static char *check_page(const char *page, const char *const *reports, size_t n) {
  const char *netlog = scratch("netlog");
  char *dom = render(page, netlog);
  char what[4096] = "";
  cr_assert_eq(fetches(dom, netlog, what, sizeof what), 0, "%s fetches: %s", page, what);
  cr_assert(strstr(dom, "id=\"filterbox\" style=\"\""), "the page's script did not run to its end");
  cr_assert_eq(count(dom, "<section class=\"run\""), n, "%s: a section per report", page);
  for (size_t k = 0; k < n; k++) {
    char *sec = section(dom, k);
    check_run(sec, reports[k]);
    free(sec);
  }
  return dom;
}

/* `replay report REPORTS... -o page`, which must succeed, then the page checked in the browser;
 * returns its DOM. */
static char *draw(const char *page, const char *const *reports, size_t n) {
  char args[8192];
  size_t len = (size_t)snprintf(args, sizeof args, "report");
  for (size_t k = 0; k < n; k++)
    len += (size_t)snprintf(args + len, sizeof args - len, " %s", reports[k]);
  snprintf(args + len, sizeof args - len, " -o %s", page);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  return check_page(page, reports, n);
}

/* Under --config=asan, LeakSanitizer's exit-time tracer crashes ("Tracer caught signal 11") in
 * a whole-bundle replay on the cpu while other cases load both cores: oneDNN's OpenMP threads are
 * not yet asleep (.bazelrc). The replays of whole bundles here run without the leak check; the
 * page's code is leak-checked in `replay report` below and `replay --html` in cli_test. */
static int replay_without_leak_check(const char *args) {
  const char *asan = getenv("ASAN_OPTIONS");
  char saved[1024], options[1100];
  snprintf(saved, sizeof saved, "%s", asan ? asan : "");
  snprintf(options, sizeof options, "%s%sdetect_leaks=0", saved, asan ? ":" : "");
  setenv("ASAN_OPTIONS", options, 1);
  int rc = replay(args);
  if (asan)
    setenv("ASAN_OPTIONS", saved, 1);
  else
    unsetenv("ASAN_OPTIONS");
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* the cases                                                                                   */

Test(report, the_example_on_the_cpu) {
  need_chromium();
  const char *report = scratch("cpu.json"), *html = scratch("run.html"),
             *page = scratch("page.html");
  char args[4096];
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --report=%s --html=%s " EXAMPLE,
           report, html);
  cr_assert_eq(replay_without_leak_check(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "wrote "), "%s", out_text);
  const char *reports[] = {report};
  free(draw(page, reports, 1));
  /* The page the run draws itself holds the same. */
  char *dom = check_page(html, reports, 1);
  cr_assert(strstr(dom, "this run on cpu"), "the --html page names its run");
  cr_assert_null(strstr(dom, "class=\"comparison\""), "one run: no speed-ups");
  free(dom);
  assert_not_blank(page);
}

Test(report, cpu_and_opencl_side_by_side) {
  need_chromium();
  const char *base = scratch("two.json"), *page = scratch("two.html");
  char args[4096], cpu[1100], ocl[1100];
  snprintf(args, sizeof args, "--hal=cpu,opencl --iters=1 --warmup=0 --report=%s " EXAMPLE, base);
  int rc = replay_without_leak_check(args);
  if (rc == 3) cr_skip_test("opencl is unavailable: %s", err_text);
  cr_assert_eq(rc, 0, "%s", err_text);
  snprintf(cpu, sizeof cpu, "%.*s.cpu.json", (int)(strlen(base) - 5), base);
  snprintf(ocl, sizeof ocl, "%.*s.opencl.json", (int)(strlen(base) - 5), base);
  const char *reports[] = {cpu, ocl};
  char *dom = draw(page, reports, 2);
  /* Speed-up bars for the ops timed on both, labelled with HAL and device. */
  char *text = read_all(cpu, NULL), *text2 = read_all(ocl, NULL);
  cJSON *a = cJSON_Parse(text), *b = cJSON_Parse(text2);
  free(text);
  free(text2);
  const cJSON *oa, *ob;
  size_t both = 0;
  cJSON_ArrayForEach(oa, cJSON_GetObjectItem(a, "ops")) {
    cJSON_ArrayForEach(ob, cJSON_GetObjectItem(b, "ops")) {
      if (number(ob, "index") == number(oa, "index") && number(oa, "median_us") > 0 &&
          number(ob, "median_us") > 0 && !strcmp(str(oa, "outcome"), "ok") &&
          !strcmp(str(ob, "outcome"), "ok"))
        both++;
    }
  }
  cr_assert_gt(both, 0);
  cr_assert_eq(count(dom, "<rect class=\"bar\""), both, "%zu bars for %zu ops timed on both",
               count(dom, "<rect class=\"bar\""), both);
  char esc[1024], want[2200];
  text_of(str(b, "device"), esc, sizeof esc);
  snprintf(want, sizeof want, "Speed-up of opencl \u00b7 %s", esc);
  cr_assert(strstr(dom, want), "the chart is not labelled %s", want);
  text_of(str(a, "device"), esc, sizeof esc);
  snprintf(want, sizeof want, "over cpu \u00b7 %s", esc);
  cr_assert(strstr(dom, want), "the chart is not labelled %s", want);
  cr_assert(strstr(dom, "geometric mean "), "no geometric mean");
  /* One bundle on two HALs: paired by position, a verdict per bar and counts per verdict. */
  cr_assert(strstr(dom, "<td>position (one bundle)</td>"), "how the runs were paired");
  size_t verdicts = count(dom, "x FASTER</text>") + count(dom, "x SLOWER</text>") +
                    count(dom, "x SAME</text>") + count(dom, "x UNSURE</text>");
  cr_assert_eq(verdicts, both, "%zu verdicts for %zu bars", verdicts, both);
  cr_assert(strstr(dom, "<th>FASTER</th><th>SLOWER</th><th>SAME</th><th>UNSURE</th>"),
            "the verdict counts' columns");
  /* Each run's time by category, the README example's GEMMs and attention among them. */
  cr_assert_eq(count(dom, "<table class=\"categories\">"), 2, "a category table per run");
  cr_assert(strstr(dom, "<tr><td>GEMM</td>") && strstr(dom, "<tr><td>attention</td>"),
            "the categories' rows");
  /* The second HAL's report carries its NMSE against the first's outputs. */
  char *sec = section(dom, 1);
  cr_assert(strstr(sec, "NMSE vs its run's first HAL"), "no NMSE column for opencl");
  free(sec);
  cJSON_Delete(a);
  cJSON_Delete(b);
  free(dom);
  assert_not_blank(page);
}

/* A run killed (SIGKILL) while it times its third op: its report holds two ops and no summary;
 * the page lists both, one unsupported with its reason, and says the run did not finish. The
 * unsupported op's name holds < > & and quotes, which must come out as text. */
Test(report, a_killed_runs_partial_report) {
  need_chromium();
  const char *bundle = scratch("killed.json"), *report = scratch("killed.report.json");
  const char *page = scratch("killed.html");
  write_text(bundle,
             "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"x::weird<T>&\\\"q\\\"\"},"
             "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
             "\"value\": {\"shape\": [8, 16], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "
             "\"type\": \"Tensor\", \"value\": {\"shape\": [16, 4], \"dtype\": \"float\"}}]},"
             "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
             "\"value\": {\"shape\": [3072, 3072], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "
             "\"type\": \"Tensor\", \"value\": {\"shape\": [3072, 3072], \"dtype\": "
             "\"float\"}}]}]}");
  char report_arg[1100];
  snprintf(report_arg, sizeof report_arg, "--report=%s", report);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl("tools/replay", "replay", "--hal=cpu", "--iters=1000", report_arg, bundle, (char *)NULL);
    _exit(127);
  }
  /* Kill it once two ops are on disk: the third takes many seconds. */
  char text[1 << 15];
  struct timespec tick = {0, 20 * 1000 * 1000};
  int status = 0;
  for (int i = 0; i < 3000; i++) {
    slurp(report, text, sizeof text);
    if (count(text, "\"index\":") >= 2) break;
    cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "replay ended before it could be killed");
    nanosleep(&tick, NULL);
  }
  kill(child, SIGKILL);
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFSIGNALED(status), "replay was not killed");
  slurp(report, text, sizeof text);
  cr_assert_eq(count(text, "\"index\":"), 2, "%s", text);
  cr_assert(strstr(text, "\"summary\": null"), "%s", text);
  const char *reports[] = {report};
  char *dom = draw(page, reports, 1);
  cr_assert(strstr(err_text, "did not finish"), "replay report says so too: %s", err_text);
  cr_assert(strstr(dom, "<td class=\"name\">x::weird&lt;T&gt;&amp;\"q\"</td>"), "the name as text");
  cr_assert_null(strstr(dom, "<t>"), "an op's name became markup");
  cr_assert(strstr(dom, "partial: the run did not finish"), "the run's entry says it is partial");
  free(dom);
  assert_not_blank(page);
}

/* A report of an older version (no peaks, date or families) is drawn with a note and no
 * ceilings; malformed ones are errors naming the file and the field, and write no page. */
Test(report, older_and_malformed_reports) {
  need_chromium();
  const char *old = "tests/data/fixtures/reports/v1_llm_small.json", *page = scratch("old.html");
  char args[4096], abs_old[2048];
  cr_assert_not_null(realpath(old, abs_old), "%s", old);
  const char *reports[] = {abs_old};
  char *dom = draw(page, reports, 1);
  cr_assert(strstr(dom, "class=\"note version\""), "no note for the old version");
  cr_assert(strstr(dom, "family not recorded"), "old reports have no families");
  cr_assert(strstr(dom, "No ceilings"), "the roofline says why it has no ceilings");
  free(dom);

  static const struct {
    const char *text, *field;
  } bad[] = {
      {"{\"ops\": 3}", "not a replay report: \"ops\" is not an array"},
      {"{\"xreplay_report\": 2, \"ops\": [{\"index\": 0, \"name\": \"aten::mm\", \"outcome\": "
       "\"ok\", \"median_us\": \"fast\"}]}",
       "ops[0].median_us: not a number"},
      {"{\"xreplay_report\": 2, \"peaks\": {\"flops\": {\"fp32\": 7}}, \"ops\": []}",
       "peaks.flops.fp32: not an object"},
      {"{\"xreplay_report\": 2, \"ops\": [{\"index\": 0, \"name\": \"aten::mm\", \"check\": "
       "{}}]}",
       "ops[0].check: not an array"},
      {"{\"xreplay_report\": 2, \"ops\": [], \"summary\": []}", "summary: not an object"},
      {"{\"ops\": [{\"index\": 0, \"name\": \"a\"}", "not a replay report: not JSON"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    const char *path = scratch("bad.json"), *none = scratch("none.html");
    write_text(path, bad[k].text);
    remove(none);
    snprintf(args, sizeof args, "report %s -o %s", path, none);
    cr_assert_eq(replay(args), 2, "%s: %s", bad[k].text, err_text);
    char want[2048];
    snprintf(want, sizeof want, "%s: %s", path, bad[k].field);
    cr_assert(strstr(err_text, want), "expected \"%s\", got %s", want, err_text);
    cr_assert_neq(access(none, F_OK), 0, "a page was written for a malformed report");
  }
  snprintf(args, sizeof args, "report %s/missing.json -o %s", tmpdir(), page);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "missing.json"), "%s", err_text);
  cr_assert_eq(replay("report"), 2, "no report, no page");
}

/* The checks can fail: a page that loads an image from the network is caught in its DOM and in
 * the net log, and a blank page's screenshot is found blank. */
Test(report, the_browser_checks_can_fail) {
  need_chromium();
  const char *fetching = scratch("fetching.html"), *blank = scratch("blank.html");
  write_text(fetching,
             "<!DOCTYPE html><html><body><img src=\"http://example.invalid/x.png\">"
             "<p>text</p></body></html>");
  write_text(blank, "<!DOCTYPE html><html><body></body></html>");
  const char *netlog = scratch("fetching.netlog");
  char *dom = render(fetching, netlog);
  char what[4096] = "";
  cr_assert_geq(fetches(dom, netlog, what, sizeof what), 2, "%s", what);
  cr_assert(strstr(what, "src=\"http://example.invalid") && strstr(what, "requested http://"), "%s",
            what);
  free(dom);
  const char *png = scratch("blank.png");
  screenshot(blank, png);
  double share;
  size_t colours;
  png_stats(png, &share, &colours);
  cr_assert(share < 0.001 && colours <= 2, "a blank page: %.3f%% differ, %zu colours", 100 * share,
            colours);
}
