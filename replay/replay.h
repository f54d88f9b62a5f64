/* The replay engine: runs each op of a bundle on one or more HAL devices, timed with device
 * events, and optionally checks it against the CPU reference, compares the devices' outputs and
 * dumps them. The engine is the only place that runs and compares.
 *
 * Per op: plan it (kernels/), initialise its inputs once (the bundle's init, its contents, or the
 * op family's initializer or one registered for the op name; seeded, so a run is reproducible),
 * and on each device in turn: pick the implementation (an unsupported op is recorded with the
 * reason and the run goes on), allocate its tensors honouring shape, strides, storage offset and
 * dtype, run it once on the fresh inputs (that execution is what --check compares with the
 * reference, what a second device is compared with the first on, and what --dump-outputs
 * writes), warm up, then time iterations between HAL events.
 *
 * Thread-safety: xr_replay_run may run concurrently on different bundles; the initializer
 * registry is guarded by a lock. */
#ifndef XR_REPLAY_REPLAY_H
#define XR_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/model.h"
#include "hal/hal.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xr_cache_mode {
  XR_CACHE_WARM = 0, /* back-to-back iterations: data stays in cache when it fits */
  XR_CACHE_COLD,     /* every cache is flushed (outside the timed window) before each iteration */
  XR_CACHE_BOTH,     /* warm, then cold: the result's times are warm, cold_* the cold ones */
} xr_cache_mode_t;

/* When an op's timing stops. */
typedef enum xr_stop_rule {
  /* At least `iters` iterations and `min_time_ms` of timed work (the default) */
  XR_STOP_ITERATIONS = 0,
  /* nvbench's rule: once `min_samples` iterations and `min_time_ms` of work are done, stop when
   * the relative standard deviation of the batch means falls under `noise_percent`; give up at
   * `max_time_ms` (the result says which happened). */
  XR_STOP_NOISE,
} xr_stop_rule_t;

/* How timed executions are launched. */
typedef enum xr_launch_mode {
  XR_LAUNCH_EAGER = 0, /* one launch per execution, each between two events */
  /* cuda/hip: N back-to-back executions captured in one graph, timed per graph launch and
   * divided by N, so that launch overhead disappears. The cpu driver's held stream (the batch
   * queued behind a gate, then released) is its equivalent there and is used in both modes;
   * opencl has no graphs and stays eager. */
  XR_LAUNCH_GRAPH,
} xr_launch_mode_t;

/* --rotate=auto: per op and device, enough copies of the inputs that together they exceed five
 * times the device's largest cache (at most 64, and a quarter of its memory). */
#define XR_ROTATE_AUTO (-1)

/* --cache-blocks: the paged KV caches (and the page lists) of the ops that read or write them.
 * AUTO: whole, unless the op's tensors would not fit in the host's or a device's memory (or
 * --max-memory); COMPACT: only the blocks the op's indices reference (kernels/kernels.h
 * xr_kernel_compact); FULL: whole, as recorded. */
typedef enum xr_cache_blocks {
  XR_CACHE_BLOCKS_AUTO = 0,
  XR_CACHE_BLOCKS_FULL,
  XR_CACHE_BLOCKS_COMPACT,
} xr_cache_blocks_t;

#define XR_REPLAY_MAX_DEVICES 8

/* A custom initializer's policy for the ops of one name: what --init=OP:POLICY gives. */
typedef struct xr_init_override {
  const char *op;     /* "vllm::outplace_fused_experts" */
  const char *policy; /* "zipf:1.2" */
} xr_init_override_t;

/* The devices of a run, each opened once by xr_replay_devices_open: the engine runs on them
 * (xr_replay_options_t.devices) and the communicator joins the ranks on the first
 * (xr_hal_comm_create), instead of each opening its own. */
typedef struct xr_replay_devices {
  size_t count;
  char specs[XR_REPLAY_MAX_DEVICES][32]; /* as opened: "cpu", "cuda:1" */
  xr_hal_device_t *devices[XR_REPLAY_MAX_DEVICES];
} xr_replay_devices_t;

/* Parses `list` (as xr_replay_options_t.device: "cpu,opencl:1"; NULL or "" is "auto") and opens
 * each device. With `local_rank` >= 0 (a launcher's rank on this node; -1: none), a list of one
 * bare driver name opens that rank's own device of the driver (local_rank modulo the driver's
 * devices: a GPU per rank). INVALID_ARGUMENT naming the entry for an unknown or malformed one, or
 * the HAL's status when a device does not open (those opened before it are closed). */
xr_status_t xr_replay_devices_open(const char *list, int local_rank, xr_replay_devices_t *out);
/* Closes the devices (after every run and communicator on them has ended). */
void xr_replay_devices_close(xr_replay_devices_t *devices);

/* Measures what `device` reaches into its properties' `measured` figures: the HAL's copy
 * bandwidths (DRAM with a working set of at least 4x its caches, and its last-level cache) and
 * the compute peak per dtype with the GEMM kernel a replay of a square aten::mm takes (or the
 * HAL's own calibration kernel, whichever is faster). Once per device; a few seconds. */
xr_status_t xr_replay_device_calibrate(xr_hal_device_t *device);

/* The peaks file: {"format": "xreplay-peaks", "devices": [{"hal": "cpu:0", "name": ...,
 * "datasheet": {"memory_bandwidth": B/s, "flops": {"fp32": FLOP/s, ...}}, "measured": {...,
 * "cache_bandwidth": B/s}}]} (docs/replay.md, "Ceilings"); a figure is a number, or
 * {"value": number, ...} as xr_peaks_write saves it (a report's `measured` block). xr_peaks_write saves the devices'
 * measured figures; xr_peaks_apply gives `device` the figures of its entry, INVALID_ARGUMENT
 * naming the file, the field and the problem for a malformed file, an entry written for another
 * device, or none for this one. */
xr_status_t xr_peaks_write(const char *path, const xr_hal_device_properties_t *devices,
                           size_t count);
xr_status_t xr_peaks_apply(const char *path, xr_hal_device_t *device);

typedef struct xr_replay_options {
  /* HAL device string: "cpu", "opencl:1", "auto" (NULL: "auto"); or several separated by commas
   * ("cpu,opencl"): every op then runs on each in turn and its outputs are compared with the
   * first device's. */
  const char *device;
  /* Devices the caller opened (xr_replay_devices_open) to run on instead of opening `device`'s
   * list, which must still name their drivers; the caller closes them. NULL: the run opens and
   * closes its own. */
  const xr_replay_devices_t *devices;
  int warmup;                /* untimed executions before timing (default 3) */
  xr_stop_rule_t stop;       /* default ITERATIONS */
  int iters;                 /* ITERATIONS: timed iterations, at least (default 20) */
  double min_time_ms;        /* ...and keep going until this much timed work (default 0) */
  int max_iters;             /* never more than this many (default 100000) */
  double noise_percent;      /* NOISE: the target relative stdev of batch means (default 0.5) */
  int min_samples;           /* NOISE: at least this many timed iterations (default 10) */
  /* Per op, stop timing after this much wall time of the timing loop. 0: none with ITERATIONS,
   * XR_NOISE_DEFAULT_MAX_TIME_MS with NOISE. */
  double max_time_ms;
  xr_launch_mode_t launch;   /* default EAGER */
  uint64_t seed;             /* initialisation seed (default 0) */
  xr_cache_mode_t cache;
  /* COLD/BOTH: bytes written to flush the caches; 0: twice every cache level the device reports
   * together (xr_flush_bytes) */
  uint64_t flush_bytes;
  int rotate;                /* cycle among N copies of the inputs (default 1), or XR_ROTATE_AUTO */
  bool check;                /* also run the CPU reference on the same inputs; NMSE per output */
  xr_kernel_choice_t choice; /* BEST, or REFERENCE to replay the reference itself (cpu only) */
  const char *op_filter;     /* only ops whose name contains this substring */
  int64_t op_limit;          /* at most this many ops (after filtering); < 0: all */
  /* Only the ops of one shard of the bundle (replay/shard.h, made with the same op_filter and
   * op_limit); NULL: all. */
  const struct xr_shard *shard;
  bool stop_on_error;        /* stop at the first failed op */
  uint64_t max_memory_bytes; /* an op whose tensors need more host (or device) memory than this
                                is unsupported ("does not fit"); 0: what is available */
  xr_cache_blocks_t cache_blocks;
  /* Write the outputs of the first execution as .npy files here (op<i>_<target>.npy); with
   * several devices, in one folder per device under it (named after the device string, ':'
   * turned into '-'). */
  const char *dump_dir;
  /* Custom-initializer policies from the command line (--init=OP:POLICY, docs/replay.md),
   * applied on top of the registered initializers; of several for one op, the last. */
  const xr_init_override_t *init_overrides;
  size_t init_override_count;
  /* Polled between ops and iterations; non-zero stops the run (a signal handler's flag:
   * observers stop it through their return value instead). */
  volatile int *cancel;
  /* An op whose noise statistic ends above this percentage is UNSTABLE (default 5). */
  double unstable_percent;
  /* Measure each device's ceilings before the first op (xr_replay_device_calibrate), which a
   * "% of peak" then uses; a few seconds per device. */
  bool calibrate;
  /* A peaks file (xr_peaks_apply) whose figures each device takes before the first op; NULL:
   * none. */
  const char *peaks_file;
  /* Collectives: the ranks they run across (xr_hal_comm_create; the caller owns it and every
   * rank runs the same bundle with the same options, which xr_replay_run checks), or NULL: this
   * process alone, where only collectives of a group of one run. */
  xr_hal_comm_t *comm;
  /* Run collectives recorded with another group size on the ranks at hand, each rank keeping
   * its recorded message (allgather's result and alltoall's totals follow the new size). */
  bool scale_collectives;
  /* Write the run's own events to this file as Chrome trace-event JSON, for Perfetto or
   * chrome://tracing (docs/replay.md, "Timeline"): a process per device, a thread per stream,
   * per op and device its span, its untimed first call and warm-up, and every timed sample as
   * the device timed it. Complete JSON after every op. Created before anything runs (an
   * unwritable path is INVALID_ARGUMENT then); each rank of a launcher writes its own, so give
   * each its own path (`replay` writes rank 0's alone). NULL: none. */
  const char *timeline;
  /* At most this many timed events per op and device in the timeline, the first ones (default
   * XR_TIMELINE_DEFAULT_EVENTS; 0: only the op and warm-up events): what keeps a 10,000-op run
   * to about 300 bytes x this x ops. The op's event counts those left out. */
  int timeline_events;
} xr_replay_options_t;

#define XR_TIMELINE_DEFAULT_EVENTS 100

void xr_replay_options_default(xr_replay_options_t *options);

/* INVALID_ARGUMENT, with the sentence, for options xr_replay_run refuses (negative counts or
 * times, a noise target that is not positive, graph launches with cold caches); OK otherwise.
 * xr_replay_run checks them itself; a caller may check before loading a bundle. */
xr_status_t xr_replay_options_check(const xr_replay_options_t *options);

#define XR_NOISE_DEFAULT_MAX_TIME_MS 1000.0

/* What the flush of --cache=cold writes on a device: `override` when non-zero, else twice all
 * its cache levels together (the last-level cache plus a memory-side cache such as AMD's
 * Infinity Cache, or every core's caches on cpu), else 128 MiB when it reports none. */
uint64_t xr_flush_bytes(const xr_hal_device_properties_t *properties, uint64_t override);

/* The input copies an op of `op_bytes` cycles among: `rotate` itself, or for XR_ROTATE_AUTO
 * enough to exceed 5x the device's largest cache, at most 64 and a quarter of its memory. */
int xr_rotate_copies(int rotate, const xr_hal_device_properties_t *properties, uint64_t op_bytes);

typedef enum xr_op_outcome {
  XR_OP_SUCCEEDED = 0,
  XR_OP_FAILED,       /* it ran and went wrong, or its check failed */
  XR_OP_UNSUPPORTED,  /* no kernel for this op, dtype or layout on this device */
  XR_OP_INTERRUPTED,  /* the run was cancelled (options.cancel) before its timing finished: no
                         time is reported, what it checked is */
} xr_op_outcome_t;

/* "ok", "failed", "unsupported", "interrupted" */
const char *xr_op_outcome_name(xr_op_outcome_t outcome);

#define XR_MAX_CHECKED_OUTPUTS 8
#define XR_REPLAY_MAX_RANK_MEDIANS 64
#define XR_REPLAY_KEPT_SAMPLES 128

typedef struct xr_op_result {
  size_t index;                   /* position in the bundle */
  const xr_op_t *op;
  size_t device_index;            /* which of the run's devices (xr_replay_summary_t.devices) */
  xr_op_outcome_t outcome;
  char message[1024];             /* why it failed or is unsupported; "" on success */
  char kernel[64];                /* implementation used */
  /* What a vendor library chose ("oneDNN 2.6.3 brg:avx512_core_amx", "cuBLASLt algo 6, tile
   * 18, ..."); "" for our own kernels (xr_kernel_instance_algorithm). */
  char algorithm[160];
  const char *family;             /* the op family that planned it ("gemm"); "" when none did */
  xr_hal_peak_dtype_t peak_dtype; /* whose peak FLOP/s bounds it: its first input's dtype */
  char init_policy[1024];         /* custom initializer policy used, "" for none */
  char device[256];               /* device name */
  int iterations;                 /* timed samples taken (all of them, set-aside ones included) */
  /* The statistics, over the samples kept: all of them unless some batches were set aside
   * because the machine was crowded while they ran (see `crowded_batches`). */
  double min_us, median_us, mean_us, p10_us, p25_us, p75_us, p90_us;
  double iqr_us; /* p75 - p25 */
  /* The samples the statistics are over, in the order taken: all of them up to
   * XR_REPLAY_KEPT_SAMPLES, else every k-th (a systematic sample keeps their distribution), for
   * a later comparison's confidence interval (replay compare). */
  int sample_count;
  double samples_us[XR_REPLAY_KEPT_SAMPLES];
  /* The noise rule's statistic: relative standard deviation of the means of consecutive
   * batches of `batch_size` samples (outliers left out), in percent; < 0 with too few. */
  double noise_percent;
  int batch_size;
  int outliers;                 /* samples beyond the far fences, left out of noise_percent */
  const char *stop_reason;      /* why timing stopped: "iterations", "noise", "max-time",
                                   "max-iterations", "cancelled" */
  bool noise_met;               /* noise_percent at or under the target (every stop rule) */
  const char *launch;           /* "eager", "graph", or "held" (the cpu driver's held stream) */
  char launch_note[256];        /* why a graph was asked for and not used; "" otherwise */
  int graph_executions;         /* graph: executions per graph launch (each sample is one
                                   launch divided by this); 0 when eager */
  double timed_wall_ms;         /* wall time of the timing loop, warm-up excluded */
  double host_us_per_iteration; /* timed_wall_ms / iterations: the kernel's time plus what
                                   replaying it costs (events, dispatch, waits) */
  /* Host contention: while each batch ran, how many threads of the whole machine were runnable
   * (Linux's count in /proc/loadavg, this thread left out), and the batches during which that
   * was more than the host has CPUs, so that some thread waited for one. On host-run devices
   * (cpu, opencl on a CPU) such batches are left out of the statistics while at least half the
   * batches are clean; `contended` says most were not, and the time is not the kernel's own. */
  double runnable_mean;
  int batches, crowded_batches;
  bool contended;
  /* The noise statistic ended above the options' unstable_percent on a host that was not
   * contended: the median itself moves by about that much from run to run. */
  bool unstable;
  /* Clocks sampled around every batch (xr_hal_device_clocks); clock_samples 0 when they could
   * not be read. slow_clock_samples: readings under 75% of the default clock. */
  int clock_samples, slow_clock_samples;
  uint32_t clock_min_mhz, clock_median_mhz, clock_default_mhz;
  /* --cache=both: the cold pass (the fields above are the warm one); cold_iterations 0 else. */
  int cold_iterations;
  double cold_median_us, cold_iqr_us, cold_noise_percent;
  uint64_t flush_bytes;           /* cold passes: bytes flushed before each execution */
  int rotate;                     /* input copies cycled among */
  double flops, bytes;            /* of one execution */
  double tflops, gbps;            /* at the median time */
  /* Of the figure named in `peak_basis` ("DRAM bandwidth (calibrated)", "fp32 peak
   * (datasheet)"); < 0, with peak_basis saying why, when there is no figure to hold it against:
   * an unknown peak, or a working set that fits in a cache whose bandwidth is unknown. */
  double peak_percent;
  char peak_basis[128];
  /* Why peak_percent is above 100: the ceiling exceeded and the likely reason; "" otherwise. */
  char above_ceiling[192];
  /* "compute" (flops / bytes above the ridge point of the ceilings the percentage uses, which
   * the page's roofline draws), "memory", or "unknown" (a ceiling it needs is unknown). */
  const char *bound;
  /* Collectives (family "collective") across ranks: their number, each rank's median (the
   * first XR_REPLAY_MAX_RANK_MEDIANS; median_us is then the slowest rank's, the collective's
   * time), and the algorithm and bus bandwidths at it (NCCL-tests' formulas) in its group of
   * group_ranks (ranks, or fewer where the ranks split into process groups); ranks 0 else. */
  int ranks, group_ranks;
  double rank_median_us[XR_REPLAY_MAX_RANK_MEDIANS];
  double algbw_gbps, busbw_gbps;
  double trace_us;                /* per-call GPU time recorded in the source trace; < 0 if none */
  bool checked;                   /* compared with the CPU reference (--check) */
  /* --check's cost: the reference's wall time and the host memory it took at its peak (the
   * process's resident high-water mark above what was resident before; -1 where Linux cannot
   * reset the mark), once per op; check_note says why an op was not checked ("" otherwise). */
  double reference_ms, reference_peak_bytes;
  /* Where the whole reference would not fit beside the op, the first check_rows of the
   * result's result_rows rows (dim 0) were checked; 0 and 0 when all were. */
  int64_t check_rows, result_rows;
  char check_note[256];
  /* --cache-blocks: the op ran on compacted caches, "cache: compact, its tensors 672.1 MiB
   * (13.85 GiB as recorded)"; "" when it ran on its tensors as recorded. */
  char cache_note[128];
  bool check_passed;
  bool compared;                  /* compared with the first device's outputs (devices 1..) */
  size_t output_count;
  struct {
    char target[64];              /* "return0", or the written argument's name */
    xr_dtype_t dtype;             /* the output's dtype (its dump is op<index>_<target>.npy) */
    double nmse;                  /* against the reference (checked) */
    double threshold;
    bool nonfinite;               /* NaN or Inf where the reference is finite */
    double nmse_vs_first;         /* against the first device's output (compared) */
    bool nonfinite_vs_first;
  } outputs[XR_MAX_CHECKED_OUTPUTS];
} xr_op_result_t;

/* Replayed vs recorded, computed by replay/trace_ratio.h: how many of the ops furthest from
 * their recorded time the statistics keep. */
#define XR_TRACE_RATIO_WORST 5

/* One op's ratio: its replayed median over its recorded per-call time. */
typedef struct xr_trace_ratio_op {
  size_t index;   /* position in the bundle */
  char name[128]; /* as the profiler spells it (cut to fit) */
  double ratio;   /* median_us / trace_us: > 1, the replay is slower than the trace */
} xr_trace_ratio_op_t;

/* The distribution of the ratios over the ops that succeeded and have a recorded time (> 0).
 * With no such op, count is 0 and the figures NAN. */
typedef struct xr_trace_ratio_stats {
  size_t count;
  double median;            /* of an even count, the mean of the two middle ratios */
  double geomean;           /* exp(mean(log ratio)) */
  double within_10_percent; /* percent of the ops with 0.9 <= ratio <= 1.1 */
  /* The ops furthest from 1 in either direction (largest |log ratio|), furthest first; equally
   * far ones in bundle order. */
  size_t worst_count;
  xr_trace_ratio_op_t worst[XR_TRACE_RATIO_WORST];
} xr_trace_ratio_stats_t;

/* One device of a run. */
typedef struct xr_replay_device {
  char spec[64];                         /* as given: "opencl:1", "auto" */
  xr_hal_device_properties_t properties; /* of the device opened (its spec is the resolved one) */
  size_t succeeded, failed, unsupported, interrupted;
  size_t contended, unstable;            /* of the ops that succeeded: timings to doubt */
  size_t unchecked;                      /* --check: ops timed but not checked (check_note) */
  double reference_ms;                   /* --check: the reference's time over the ops */
  double reference_peak_bytes;           /* ... and the largest of its peaks */
  double trace_covered_us;               /* recorded GPU time of the ops that succeeded on it */
  /* Whether each op's executions here are wrapped in a profiler range named "<index> <op>"
   * (xr_hal_device_range_push: NVTX on cuda, roctx on hip), and what serves them, or why not. */
  bool ranges;
  char ranges_source[256];
  /* Replayed vs recorded over the ops that succeeded here with a recorded time, and whether
   * this device is the model the trace ran on (xr_trace_device_same_model). */
  xr_trace_ratio_stats_t replay_vs_trace;
  bool same_device;
} xr_replay_device_t;

typedef struct xr_replay_summary {
  size_t total;          /* ops in the bundle */
  uint64_t bundle_hash;  /* xr_bundle_hash: reports of one bundle are matched op by op */
  size_t attempted;      /* after --op-filter and --op-limit */
  bool cancelled;
  bool checked;          /* --check: ops were compared with the reference */
  double trace_total_us; /* recorded GPU time of the whole bundle (sum over ops of op time) */
  size_t device_count;
  xr_replay_device_t devices[XR_REPLAY_MAX_DEVICES];
  /* The first device's counts (devices[0]), for the common single-device run. */
  size_t succeeded, failed, unsupported, interrupted;
  double trace_covered_us;
} xr_replay_summary_t;

/* Rates at the median time, the op's bound and the percentage of the ceiling that bounds it
 * (replay/ceilings.c says how): `flops` and `bytes` of one execution, `touched` the bytes every
 * rotation copy touches, `flushed` whether every cache was flushed before each execution. Sets
 * tflops, gbps, bound, peak_percent (left < 0 without a ceiling), peak_basis, above_ceiling. */
void xr_derive_rates(const xr_hal_device_properties_t *props, double flops, double bytes,
                     double touched, bool flushed, xr_op_result_t *r);

/* What a caller sees of a run as it goes; every member may be NULL. */
typedef struct xr_replay_observer {
  /* Once, after the devices opened and before the first op: `run` lists them (counts still 0)
   * and says how many ops will be attempted. Returns false to stop the run there (the caller
   * cannot keep what it would measure: a report that does not open); the summary then says
   * cancelled, with nothing attempted. */
  bool (*started)(void *context, const xr_replay_summary_t *run);
  /* After every op on every device, in order: op by op, each op on the devices in the order
   * given. Reports are written from here, so that nothing measured is lost if the run dies
   * later. `position` counts the attempted ops (0 .. count-1). */
  void (*result)(void *context, const xr_op_result_t *result, size_t position, size_t count);
  void *context;
} xr_replay_observer_t;

/* Runs the bundle. Returns UNAVAILABLE (with the driver's reason) when a device cannot be opened,
 * INVALID_ARGUMENT for bad options or a timeline that cannot be created; DATA_LOSS when writing
 * the timeline fails (the run stops after that op, the summary filled); otherwise OK, per-op
 * outcomes being in the results and the summary even when ops failed. `observer` and
 * `out_summary` may be NULL. */
xr_status_t xr_replay_run(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                          const xr_replay_observer_t *observer, xr_replay_summary_t *out_summary);

/* ------------------------------------------------------------------------------------------ */
/* planning: what a run would do, without running                                              */

/* What xr_replay_run would do with one op on one device. */
typedef struct xr_plan_entry {
  size_t index;                 /* position in the bundle */
  const xr_op_t *op;
  size_t device_index;          /* which of the plan's devices */
  /* SUCCEEDED: it would run, with `kernel`; UNSUPPORTED or FAILED (planning failed: malformed
   * arguments): `message` is the sentence the run would report. On a device that could not be
   * opened: UNSUPPORTED with the device's reason (counted nowhere). */
  xr_op_outcome_t outcome;
  char kernel[64];              /* the implementation selected, "" when none was (as the run's) */
  char message[1024];
  double flops, bytes;          /* of one execution, from the plan (0 when planning failed) */
  double trace_us;              /* per-call GPU time recorded in the source trace; < 0 if none */
} xr_plan_entry_t;

typedef struct xr_plan_device {
  char spec[64];                         /* as given: "opencl:1", "auto" */
  xr_status_t status;                    /* XR_OK, or why it could not be opened */
  char message[1024];                    /* that reason, the HAL's sentence */
  xr_hal_device_properties_t properties; /* when opened (its spec is the resolved one) */
  size_t runnable, failed, unsupported;  /* of the attempted ops */
  double trace_covered_us;               /* recorded GPU time of the ops that would run */
} xr_plan_device_t;

typedef struct xr_replay_plan {
  size_t total;          /* ops in the bundle */
  size_t attempted;      /* after --op-filter and --op-limit */
  double trace_total_us; /* recorded GPU time of the whole bundle, as xr_replay_summary_t */
  size_t device_count;
  xr_plan_device_t devices[XR_REPLAY_MAX_DEVICES];
  /* attempted * device_count entries, op by op, each op on the devices in order:
   * entries[position * device_count + device]. */
  xr_plan_entry_t *entries;
} xr_replay_plan_t;

/* Decides, for every op `options` selects (device list, --op-filter, --op-limit) and every
 * device, what xr_replay_run with the same options would do: the same function decides both
 * (plan, implementation selection, the host- and device-memory checks of --max-memory and
 * --rotate), so a device's trace_covered_us here is what the run's summary reports, except for
 * ops that would run and then fail (reading their contents, their initializer, the kernel's
 * preparation or execution, --check). Opens the devices but allocates no buffer on them and
 * runs nothing. A device that cannot be opened is kept with its status and reason; UNAVAILABLE
 * (with every device's reason) only when none can, INVALID_ARGUMENT for a bad list or an
 * unknown driver.
 * Release with xr_replay_plan_free. Thread-safe as xr_replay_run. */
xr_status_t xr_replay_plan(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                           xr_replay_plan_t **out_plan);
void xr_replay_plan_free(xr_replay_plan_t *plan); /* accepts NULL */

/* Plans op `index` of `bundle` as a run would, without a device: SUCCEEDED when its arguments
 * plan; UNSUPPORTED when no kernel knows the op or this form of it (a run reports it so on every
 * device); FAILED when its arguments are malformed for the op (shapes that do not agree, wrong
 * dtypes, an argument of the wrong kind), which a run reports as a failure on every device. The
 * planner's sentence, naming the op and the argument, in `message` for the last two. What
 * `replay validate` checks. Thread-safe. */
xr_op_outcome_t xr_replay_plan_op(const xr_bundle_t *bundle, size_t index, char *message,
                                  size_t message_size);

/* How many of the bundle's ops `options->op_filter` selects (all without a filter), before
 * --op-limit and --shard: a filter that selects none would make an empty run. */
size_t xr_replay_filter_count(const xr_bundle_t *bundle, const xr_replay_options_t *options);
/* Whether `op` passes `options->op_filter` (its name contains the text; every op without a
 * filter): the one matcher of --op-filter, for a run, its plan and shards, and `replay slice`. */
bool xr_op_passes_filter(const xr_replay_options_t *options, const xr_op_t *op);

/* NMSE of `actual` against `expected`, two storages of the same view (dtype, shape, strides,
 * offset): sum (a - e)^2 / sum e^2 over the elements where e is finite, with *out_nonfinite set
 * when a is NaN or Inf where e is finite. What --check and the comparison of devices use. */
double xr_replay_nmse(const xr_tensor_t *view, const void *actual, const void *expected,
                      bool *out_nonfinite);

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* Registers `fn` (xr_initializer_fn, kernels/kernels.h) for an exact op name. It replaces the
 * op family's own initializer, and a later registration for the same name replaces an earlier
 * one. Thread-safe. */
xr_status_t xr_replay_register_initializer(const char *op_name, xr_initializer_fn fn);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_REPLAY_H */
