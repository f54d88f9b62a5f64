/* Graph-mode extraction: a fixed graph trace (two launches of one captured graph, its kernels
 * carrying graph node ids) with the input as its capture trace. Matching, by node id or by
 * alignment, must never crash, and what it writes must validate. */
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/trace_extract.h"
#include "tests/fuzz/fuzz.h"

static const char graph_trace[] =
    "{\"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
    "\"execute_context_0(0)_generation_8(8)\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 900},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", \"pid\": 1, "
    "\"tid\": 1, \"ts\": 10, \"dur\": 5, \"args\": {\"correlation\": 7}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ka_0<float>(float*)\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 100, \"dur\": 1, \"args\": {\"correlation\": 7, \"graph node id\": "
    "30064771072}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ka_1<float>(float*)\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 110, \"dur\": 2, \"args\": {\"correlation\": 7, \"grid\": [1, 1, 1], "
    "\"block\": [64, 1, 1], \"graph node id\": 30064771073}},"
    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\", "
    "\"pid\": 0, \"tid\": 7, \"ts\": 120, \"dur\": 1, \"args\": {\"correlation\": 7, "
    "\"graph node id\": 30064771074}},"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", \"pid\": 1, "
    "\"tid\": 1, \"ts\": 1000, \"dur\": 5, \"args\": {\"correlation\": 8}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ka_0<float>(float*)\", \"pid\": 0, "
    "\"tid\": 7, \"ts\": 1100, \"dur\": 1, \"args\": {\"correlation\": 8, \"graph node id\": "
    "30064771072}}"
    "]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xr_extract_capture_t cap = {.path = fuzz_write("capture.json", data, size)};
  xr_extract_options_t o = {.captures = &cap, .capture_count = 1};
  xr_bundle_t *b = NULL;
  xr_extract_summary_t s;
  if (xr_trace_extract_memory(graph_trace, strlen(graph_trace), "graph.json", &o, &b, &s) ==
      XR_OK) {
    fuzz_require(xr_bundle_validate(b, false, NULL) == XR_OK, "%s", xr_last_error());
    fuzz_require(s.graph_kernels_matched <= s.graph_kernels, "%zu of %zu", s.graph_kernels_matched,
                 s.graph_kernels);
    fuzz_require(
        s.graph_kernels_node_joined <= s.graph_kernels_matched &&
            s.graph_launches_node_joined + s.graph_launches_node_declined <= s.graph_launches,
        "node joins: %zu kernels, %zu + %zu launches", s.graph_kernels_node_joined,
        s.graph_launches_node_joined, s.graph_launches_node_declined);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
  remove(cap.path);
  return 0;
}
