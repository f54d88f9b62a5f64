/* aten::mm on a device from C, through the op model and the replay engine: the op is built in
 * memory (no bundle file), replayed, checked against the CPU reference, and its time printed.
 *
 *   ./bazelw run //examples/embed:mm -- opencl
 *   cc mm.c $(pkg-config --cflags --libs xreplay) -o mm && ./mm cpu    (an installed prefix) */
#include <stdio.h>

#include "replay/replay.h"

static void print(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  (void)context, (void)position, (void)count;
  if (r->outcome != XR_OP_SUCCEEDED) printf("%s: %s\n", r->op->name, r->message);
  else printf("%s on %s: %s, %.2f us, %.3f TFLOP/s, nmse %.2g against the reference\n",
              r->op->name, r->device, r->kernel, r->median_us, r->tflops, r->outputs[0].nmse);
}

int main(int argc, char **argv) {
  xr_bundle_t *b;
  if (xr_bundle_create(&b) != XR_OK) return 1;
  xr_op_t *mm = xr_bundle_add_op(b, "aten::mm");
  xr_op_add_tensor(b->arena, mm, "self", XR_DTYPE_BF16, 2, (int64_t[]){256, 512}, NULL);
  xr_op_add_tensor(b->arena, mm, "mat2", XR_DTYPE_BF16, 2, (int64_t[]){512, 128}, NULL);
  xr_replay_options_t options;
  xr_replay_options_default(&options);
  options.device = argc > 1 ? argv[1] : "cpu";
  options.check = true;
  xr_status_t st = xr_replay_run(b, &options, &(xr_replay_observer_t){.result = print}, NULL);
  if (st != XR_OK) fprintf(stderr, "mm: %s\n", xr_last_error());
  xr_bundle_destroy(b);
  return st == XR_OK ? 0 : 1;
}
