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
  XR_CACHE_COLD,     /* the last-level cache is flushed (outside the timed window) each time */
} xr_cache_mode_t;

#define XR_REPLAY_MAX_DEVICES 8

typedef struct xr_replay_options {
  /* HAL device string: "cpu", "opencl:1", "auto" (NULL: "auto"); or several separated by commas
   * ("cpu,opencl"): every op then runs on each in turn and its outputs are compared with the
   * first device's. */
  const char *device;
  int warmup;                /* untimed executions before timing (default 3) */
  int iters;                 /* timed iterations, at least (default 20) */
  double min_time_ms;        /* ...and keep going until this much timed work (default 0) */
  int max_iters;             /* never more than this many (default 100000) */
  uint64_t seed;             /* initialisation seed (default 0) */
  xr_cache_mode_t cache;
  int rotate;                /* cycle among N copies of the inputs (default 1) */
  bool check;                /* also run the CPU reference on the same inputs; NMSE per output */
  xr_kernel_choice_t choice; /* BEST, or REFERENCE to replay the reference itself (cpu only) */
  const char *op_filter;     /* only ops whose name contains this substring */
  int64_t op_limit;          /* at most this many ops (after filtering); < 0: all */
  bool stop_on_error;        /* stop at the first failed op */
  uint64_t max_memory_bytes; /* an op whose tensors need more host (or device) memory than this
                                is unsupported ("does not fit"); 0: what is available */
  /* Write the outputs of the first execution as .npy files here (op<i>_<target>.npy); with
   * several devices, in one folder per device under it (named after the device string, ':'
   * turned into '-'). */
  const char *dump_dir;
  /* Custom-initializer policies from the command line, "op_name:policy" entries separated by
   * ';' (see docs/replay.md), applied on top of the registered initializers. NULL for none. */
  const char *init_overrides;
  volatile int *cancel;      /* polled between ops and iterations; non-zero stops the run */
  /* Measure the device's memory bandwidth (and what else the HAL calibrates) when no datasheet
   * figure exists, so that "% of peak" can be given; about half a second, once per run. */
  bool calibrate;
} xr_replay_options_t;

void xr_replay_options_default(xr_replay_options_t *options);

typedef enum xr_op_outcome {
  XR_OP_SUCCEEDED = 0,
  XR_OP_FAILED,       /* it ran and went wrong, or its check failed */
  XR_OP_UNSUPPORTED,  /* no kernel for this op, dtype or layout on this device */
} xr_op_outcome_t;

const char *xr_op_outcome_name(xr_op_outcome_t outcome); /* "ok", "failed", "unsupported" */

#define XR_MAX_CHECKED_OUTPUTS 8

typedef struct xr_op_result {
  size_t index;                   /* position in the bundle */
  const xr_op_t *op;
  size_t device_index;            /* which of the run's devices (xr_replay_summary_t.devices) */
  xr_op_outcome_t outcome;
  char message[1024];             /* why it failed or is unsupported; "" on success */
  char kernel[64];                /* implementation used */
  const char *family;             /* the op family that planned it ("gemm"); "" when none did */
  xr_hal_peak_dtype_t peak_dtype; /* whose peak FLOP/s bounds it: its first input's dtype */
  char init_policy[1024];         /* custom initializer policy used, "" for none */
  char device[256];               /* device name */
  int iterations;
  double min_us, median_us, mean_us, p10_us, p90_us;
  double host_us_per_iteration;   /* wall time of the timed loop / iterations: the kernel's time
                                     plus what replaying it costs (events, dispatch, waits) */
  double flops, bytes;            /* of one execution */
  double tflops, gbps;            /* at the median time */
  double peak_percent;            /* of the device's peak for the op's bound (compute or memory) */
  bool compute_bound;             /* flops / bytes above the device's ridge point */
  double trace_us;                /* per-call GPU time recorded in the source trace; < 0 if none */
  bool checked;                   /* compared with the CPU reference (--check) */
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

/* One device of a run. */
typedef struct xr_replay_device {
  char spec[64];                         /* as given: "opencl:1", "auto" */
  xr_hal_device_properties_t properties; /* of the device opened (its spec is the resolved one) */
  size_t succeeded, failed, unsupported;
  double trace_covered_us;               /* recorded GPU time of the ops that succeeded on it */
} xr_replay_device_t;

typedef struct xr_replay_summary {
  size_t total;          /* ops in the bundle */
  size_t attempted;      /* after --op-filter and --op-limit */
  bool cancelled;
  double trace_total_us; /* recorded GPU time of the whole bundle (sum over ops of op time) */
  size_t device_count;
  xr_replay_device_t devices[XR_REPLAY_MAX_DEVICES];
  /* The first device's counts (devices[0]), for the common single-device run. */
  size_t succeeded, failed, unsupported;
  double trace_covered_us;
} xr_replay_summary_t;

/* What a caller sees of a run as it goes; every member may be NULL. */
typedef struct xr_replay_observer {
  /* Once, after the devices opened and before the first op: `run` lists them (counts still 0)
   * and says how many ops will be attempted. */
  void (*started)(void *context, const xr_replay_summary_t *run);
  /* After every op on every device, in order: op by op, each op on the devices in the order
   * given. Reports are written from here, so that nothing measured is lost if the run dies
   * later. `position` counts the attempted ops (0 .. count-1). */
  void (*result)(void *context, const xr_op_result_t *result, size_t position, size_t count);
  void *context;
} xr_replay_observer_t;

/* Runs the bundle. Returns UNAVAILABLE (with the driver's reason) when a device cannot be opened,
 * INVALID_ARGUMENT for bad options; otherwise OK, per-op outcomes being in the results and the
 * summary even when ops failed. `observer` and `out_summary` may be NULL. */
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
