/* The dtype table: every element type xreplay models, listed once. Expanded for C
 * (base/dtype.h, base/dtype.c), for CUDA/HIP device code (kernels/gpu/dtype_codes.h) and for
 * OpenCL C (kernels/opencl/dtype_codes.h); the includer defines XR_DTYPE first.
 *
 *   XR_DTYPE(NAME, code, profiler spelling, short name, bytes, class, torch ScalarType code)
 *
 * code:      the value of XR_DTYPE_<NAME> (0 is XR_DTYPE_INVALID); device code receives it as is.
 * spelling:  how PyTorch's profiler writes the type in a trace ("c10::BFloat16"), and what
 *            bundles store.
 * class:     FLOAT, FLOAT8 (the four 8-bit float formats), SIGNED, UNSIGNED, BOOL or MX (the
 *            parts of microscaling formats: fp4 e2m1 codes packed two per byte, low nibble
 *            first, the element with the lower index, and e8m0 power-of-two scales; torch's
 *            float4_e2m1fn_x2 and float8_e8m0fnu, whose shapes count bytes).
 * torch:     c10::ScalarType's number, as traces record a `dtype` argument.
 * No include guard: included once per expansion. */
XR_DTYPE(F32, 1, "float", "f32", 4, FLOAT, 6)
XR_DTYPE(F64, 2, "double", "f64", 8, FLOAT, 7)
XR_DTYPE(F16, 3, "c10::Half", "f16", 2, FLOAT, 5)
XR_DTYPE(BF16, 4, "c10::BFloat16", "bf16", 2, FLOAT, 15)
XR_DTYPE(F8E4M3FN, 5, "c10::Float8_e4m3fn", "f8e4m3fn", 1, FLOAT8, 24)
XR_DTYPE(F8E5M2, 6, "c10::Float8_e5m2", "f8e5m2", 1, FLOAT8, 23)
XR_DTYPE(F8E4M3FNUZ, 7, "c10::Float8_e4m3fnuz", "f8e4m3fnuz", 1, FLOAT8, 26)
XR_DTYPE(F8E5M2FNUZ, 8, "c10::Float8_e5m2fnuz", "f8e5m2fnuz", 1, FLOAT8, 25)
XR_DTYPE(I8, 9, "signed char", "i8", 1, SIGNED, 1)
XR_DTYPE(I16, 10, "short int", "i16", 2, SIGNED, 2)
XR_DTYPE(I32, 11, "int", "i32", 4, SIGNED, 3)
XR_DTYPE(I64, 12, "long int", "i64", 8, SIGNED, 4)
XR_DTYPE(U8, 13, "unsigned char", "u8", 1, UNSIGNED, 0)
XR_DTYPE(U16, 14, "unsigned short", "u16", 2, UNSIGNED, 27)
XR_DTYPE(U32, 15, "unsigned int", "u32", 4, UNSIGNED, 28)
XR_DTYPE(U64, 16, "unsigned long", "u64", 8, UNSIGNED, 29)
XR_DTYPE(BOOL, 17, "bool", "bool", 1, BOOL, 11)
XR_DTYPE(F4E2M1X2, 18, "c10::Float4_e2m1fn_x2", "f4e2m1x2", 1, MX, 45)
XR_DTYPE(F8E8M0, 19, "c10::Float8_e8m0fnu", "f8e8m0", 1, MX, 44)
