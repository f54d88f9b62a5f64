// A trivial program the tests build to check that embedding and run-time builds work.
__kernel void xr_probe_fill(__global float *out, const float value) {
  out[get_global_id(0)] = value;
}
