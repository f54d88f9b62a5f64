/* The pointwise ops of the elementwise family, one row each, written once and expanded into the
 * CPU reference (kernels/pointwise.c), the cpu fast path (kernels/cpu/elementwise_cpu.c), OpenCL
 * C (kernels/opencl/elementwise.cl) and CUDA/HIP (kernels/gpu/elementwise.cu). No include guard:
 * each expansion defines XR_PW (and XR_PW_MATH1/2 where it needs the math list) first.
 *
 * XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR)
 *   ID          enum suffix: XR_EW_<ID>
 *   NAME        the aten base name; `aten::NAME`, `aten::NAME_` (in place on the first operand),
 *               `aten::_foreach_NAME_` (in place over lists) and out= overloads are all served
 *   KIND        how the result dtype follows from the operands (torch's rules):
 *                 FLOAT  promoted; bool and integer inputs compute in float32 (exp, sqrt ...)
 *                 SAME   promoted; integers compute in int64 with INT_EXPR
 *                 CMP    compares in the promoted dtype; the result is bool
 *                 PRED   tests each element of its own dtype; bool result (isnan ...)
 *                 LOGIC  truth values of any dtype; bool result
 *                 BITS   integers and bools only, computed with INT_EXPR
 *                 SELF   the first operand's dtype (masked_fill)
 *   OPERANDS    schema names of the tensor-or-Scalar operands, read as a, b, c; a name ending in
 *               '~' takes no part in type promotion (where's condition, masked_fill's mask)
 *   PARAMS      "name=default,...": Scalar arguments read as p0, p1, p2 (None reads as NaN)
 *   FLOPS       floating-point operations per element, for the plan's cost
 *   FLOAT_EXPR  the value, in the compute type T (double in the reference, float elsewhere);
 *               math through pw_<fn>() (the XR_PW_MATH lists below), constants as K(x), truth
 *               values as B(cond)
 *   INT_EXPR    the value for integer compute, in 64-bit a, b, c with ip0, ip1 (the Scalar
 *               arguments as integers; None: the int64 limits), `boolean` (the compute dtype is
 *               bool) and the wrapping pw_i helpers below; 0 where KIND has none
 */

#ifdef XR_PW_MATH1
XR_PW_MATH1(fabs) XR_PW_MATH1(sqrt) XR_PW_MATH1(exp) XR_PW_MATH1(exp2) XR_PW_MATH1(expm1)
XR_PW_MATH1(log) XR_PW_MATH1(log2) XR_PW_MATH1(log10) XR_PW_MATH1(log1p) XR_PW_MATH1(sin)
XR_PW_MATH1(cos) XR_PW_MATH1(tan) XR_PW_MATH1(tanh) XR_PW_MATH1(asin) XR_PW_MATH1(acos)
XR_PW_MATH1(atan) XR_PW_MATH1(sinh) XR_PW_MATH1(cosh) XR_PW_MATH1(erf) XR_PW_MATH1(erfc)
XR_PW_MATH1(floor) XR_PW_MATH1(ceil) XR_PW_MATH1(trunc) XR_PW_MATH1(rint)
#endif
#ifdef XR_PW_MATH2
XR_PW_MATH2(fmod) XR_PW_MATH2(pow) XR_PW_MATH2(atan2) XR_PW_MATH2(hypot) XR_PW_MATH2(copysign)
XR_PW_MATH2(fmax) XR_PW_MATH2(fmin)
#endif

/* Helpers some formulas call, for a backend that defines XR_PW_HELPER (the functions'
 * qualifiers) and XR_PW_T (its compute type) after its pw_ math functions and K(). */
#ifdef XR_PW_HELPER
/* erfinv by M. Giles' single-precision approximation ("Approximating the erfinv function",
 * 2010); the reference refines it to double. */
XR_PW_HELPER XR_PW_T pw_erfinv_approx(XR_PW_T y) {
  if (y == K(1) || y == K(-1)) return y / K(0);
  XR_PW_T w = -pw_log((K(1) - y) * (K(1) + y)), p;
  if (w < K(5)) {
    w = w - K(2.5);
    p = K(2.81022636e-08);
    p = K(3.43273939e-07) + p * w;
    p = K(-3.5233877e-06) + p * w;
    p = K(-4.39150654e-06) + p * w;
    p = K(0.00021858087) + p * w;
    p = K(-0.00125372503) + p * w;
    p = K(-0.00417768164) + p * w;
    p = K(0.246640727) + p * w;
    p = K(1.50140941) + p * w;
  } else {
    w = pw_sqrt(w) - K(3);
    p = K(-0.000200214257);
    p = K(0.000100950558) + p * w;
    p = K(0.00134934322) + p * w;
    p = K(-0.00367342844) + p * w;
    p = K(0.00573950773) + p * w;
    p = K(-0.0076224613) + p * w;
    p = K(0.00943887047) + p * w;
    p = K(1.00167406) + p * w;
    p = K(2.83297682) + p * w;
  }
  return p * y;
}
#endif

/* The integer helpers, for a backend that defines XR_PW_INT_HELPER (qualifiers) and XR_PW_I /
 * XR_PW_U (its signed and unsigned 64-bit types): two's-complement wrap-around where C would
 * overflow; a zero divisor gives 0 (torch raises; seeded inputs hold zeros). */
#ifdef XR_PW_INT_HELPER
XR_PW_INT_HELPER XR_PW_I pw_ineg(XR_PW_I x) { return (XR_PW_I)((XR_PW_U)0 - (XR_PW_U)x); }
XR_PW_INT_HELPER XR_PW_I pw_imul(XR_PW_I x, XR_PW_I y) {
  return (XR_PW_I)((XR_PW_U)x * (XR_PW_U)y);
}
/* x % -1 is 0, and INT64_MIN % -1 overflows in C */
XR_PW_INT_HELPER XR_PW_I pw_ifmod(XR_PW_I x, XR_PW_I y) {
  return y == 0 || y == -1 ? 0 : x % y;
}
/* x / y rounded toward zero, or toward -inf (`floor`); INT64_MIN / -1 wraps */
XR_PW_INT_HELPER XR_PW_I pw_idiv(XR_PW_I x, XR_PW_I y, int floor) {
  if (y == 0) return 0;
  if (y == -1) return pw_ineg(x);
  XR_PW_I q = x / y;
  return floor && x % y != 0 && (x < 0) != (y < 0) ? q - 1 : q;
}
XR_PW_INT_HELPER XR_PW_I pw_iremainder(XR_PW_I x, XR_PW_I y) {
  XR_PW_I r = pw_ifmod(x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
XR_PW_INT_HELPER XR_PW_I pw_ipow(XR_PW_I base, XR_PW_I e) {
  if (e < 0) return base == 1 ? 1 : base == -1 ? (e % 2 ? -1 : 1) : 0;
  XR_PW_I r = 1;
  for (; e; e >>= 1, base = pw_imul(base, base))
    if (e & 1) r = pw_imul(r, base);
  return r;
}
/* torch: shifts by the width or more give 0 (left) or the sign (right) */
XR_PW_INT_HELPER XR_PW_I pw_ishl(XR_PW_I x, XR_PW_I y) {
  return y < 0 || y >= 64 ? 0 : (XR_PW_I)((XR_PW_U)x << y);
}
XR_PW_INT_HELPER XR_PW_I pw_ishr(XR_PW_I x, XR_PW_I y) {
  return y < 0 || y >= 64 ? (x < 0 ? -1 : 0) : x >> y;
}
#endif

#ifdef XR_PW
/* NaN propagates through every comparison-based op, as torch's kernels do. */
#define XR_PW_NAN(a) ((a) != (a))
/* Infinity, as 1 / 0 unless the backend names a constant: GCC keeps 1.0f / 0.0f a run-time
 * division (it would raise divide-by-zero), which stops the cpu's loops from vectorising. */
#ifndef XR_PW_INF
#define XR_PW_INF (K(1) / K(0))
#define XR_PW_INF_DEFAULT
#endif
/* min(max(x, lo), hi) where a NaN bound (None) is not applied: its comparisons are false. */
#define pw_clamp(x, lo, hi) \
  (((x) < (lo) ? (lo) : (x)) > (hi) ? (hi) : ((x) < (lo) ? (lo) : (x)))
/* unary */
XR_PW(ABS, "abs", SAME, "self", "", 1, pw_fabs(a), a < 0 ? pw_ineg(a) : a)
XR_PW(NEG, "neg", SAME, "self", "", 1, -a, pw_ineg(a))
XR_PW(SIGN, "sign", SAME, "self", "", 1, XR_PW_NAN(a) ? a : B(a > K(0)) - B(a < K(0)), (a > 0) - (a < 0))
XR_PW(SQRT, "sqrt", FLOAT, "self", "", 1, pw_sqrt(a), 0)
XR_PW(RSQRT, "rsqrt", FLOAT, "self", "", 2, K(1) / pw_sqrt(a), 0)
XR_PW(EXP, "exp", FLOAT, "self", "", 4, pw_exp(a), 0)
XR_PW(EXP2, "exp2", FLOAT, "self", "", 4, pw_exp2(a), 0)
XR_PW(EXPM1, "expm1", FLOAT, "self", "", 4, pw_expm1(a), 0)
XR_PW(LOG, "log", FLOAT, "self", "", 4, pw_log(a), 0)
XR_PW(LOG2, "log2", FLOAT, "self", "", 4, pw_log2(a), 0)
XR_PW(LOG10, "log10", FLOAT, "self", "", 4, pw_log10(a), 0)
XR_PW(LOG1P, "log1p", FLOAT, "self", "", 4, pw_log1p(a), 0)
XR_PW(SIN, "sin", FLOAT, "self", "", 4, pw_sin(a), 0)
XR_PW(COS, "cos", FLOAT, "self", "", 4, pw_cos(a), 0)
XR_PW(TAN, "tan", FLOAT, "self", "", 4, pw_tan(a), 0)
XR_PW(TANH, "tanh", FLOAT, "self", "", 4, pw_tanh(a), 0)
XR_PW(ASIN, "asin", FLOAT, "self", "", 4, pw_asin(a), 0)
XR_PW(ACOS, "acos", FLOAT, "self", "", 4, pw_acos(a), 0)
XR_PW(ATAN, "atan", FLOAT, "self", "", 4, pw_atan(a), 0)
XR_PW(SINH, "sinh", FLOAT, "self", "", 4, pw_sinh(a), 0)
XR_PW(COSH, "cosh", FLOAT, "self", "", 4, pw_cosh(a), 0)
XR_PW(SIGMOID, "sigmoid", FLOAT, "self", "", 4, K(1) / (K(1) + pw_exp(-a)), 0)
XR_PW(ERF, "erf", FLOAT, "self", "", 4, pw_erf(a), 0)
XR_PW(ERFC, "erfc", FLOAT, "self", "", 4, pw_erfc(a), 0)
XR_PW(ERFINV, "erfinv", FLOAT, "self", "", 8, pw_erfinv(a), 0)
XR_PW(RECIPROCAL, "reciprocal", FLOAT, "self", "", 1, K(1) / a, 0)
XR_PW(FLOOR, "floor", SAME, "self", "", 1, pw_floor(a), a)
XR_PW(CEIL, "ceil", SAME, "self", "", 1, pw_ceil(a), a)
/* torch.round: half to even; round(decimals=d) scales by 10^d first. */
XR_PW(ROUND, "round", SAME, "self", "decimals=0", 1,
      p0 == K(0) ? pw_rint(a) : pw_rint(a * pw_pow(K(10), p0)) / pw_pow(K(10), p0), a)
XR_PW(TRUNC, "trunc", SAME, "self", "", 1, pw_trunc(a), a)
XR_PW(FRAC, "frac", FLOAT, "self", "", 1, a - pw_trunc(a), 0)
XR_PW(RELU, "relu", SAME, "self", "", 1, a > K(0) || XR_PW_NAN(a) ? a : K(0), a > 0 ? a : 0)
XR_PW(HARDTANH, "hardtanh", SAME, "self", "min_val=-1,max_val=1", 2,
      XR_PW_NAN(a) ? a : a < p0 ? p0 : a > p1 ? p1 : a, a < ip0 ? ip0 : a > ip1 ? ip1 : a)
XR_PW(HARDSIGMOID, "hardsigmoid", FLOAT, "self", "", 3,
      XR_PW_NAN(a) ? a : a <= K(-3) ? K(0) : a >= K(3) ? K(1) : a / K(6) + K(0.5), 0)
XR_PW(HARDSWISH, "hardswish", FLOAT, "self", "", 4,
      XR_PW_NAN(a) ? a : a <= K(-3) ? K(0) : a >= K(3) ? a : a * (a + K(3)) / K(6), 0)
XR_PW(LEAKY_RELU, "leaky_relu", FLOAT, "self", "negative_slope=0.01", 2, a > K(0) ? a : a * p0, 0)
XR_PW(ELU, "elu", FLOAT, "self", "alpha=1,scale=1,input_scale=1", 6,
      a > K(0) ? p1 * a : p1 * p0 * pw_expm1(a * p2), 0)
/* softplus(beta, threshold): linear above threshold / beta, as torch. */
XR_PW(SOFTPLUS, "softplus", FLOAT, "self", "beta=1,threshold=20", 6,
      a * p0 > p1 ? a : pw_log1p(pw_exp(a * p0)) / p0, 0)
XR_PW(MISH, "mish", FLOAT, "self", "", 10, a * pw_tanh(pw_log1p(pw_exp(a))), 0)
/* logit(eps=None): eps given clamps the input into [eps, 1 - eps] first. */
XR_PW(LOGIT, "logit", FLOAT, "self", "eps=None", 4,
      XR_PW_NAN(p0) ? pw_log(a / (K(1) - a))
                    : pw_log((a < p0 ? p0 : a > K(1) - p0 ? K(1) - p0 : a) /
                             (K(1) - (a < p0 ? p0 : a > K(1) - p0 ? K(1) - p0 : a))), 0)
XR_PW(ISNAN, "isnan", PRED, "self", "", 1, B(XR_PW_NAN(a)), 0)
XR_PW(ISINF, "isinf", PRED, "self", "", 1, B(pw_fabs(a) == XR_PW_INF), 0)
XR_PW(ISFINITE, "isfinite", PRED, "self", "", 1, B(pw_fabs(a) < XR_PW_INF), 1)
/* nan_to_num: None bounds read as the result dtype's largest finite values (set at planning). */
XR_PW(NAN_TO_NUM, "nan_to_num", SAME, "self", "nan=0,posinf=None,neginf=None", 2,
      XR_PW_NAN(a) ? p0 : a == XR_PW_INF ? p1 : a == -XR_PW_INF ? p2 : a, a)
XR_PW(CLAMP, "clamp", SAME, "self", "min=None,max=None", 2,
      XR_PW_NAN(a) ? a : pw_clamp(a, p0, p1), pw_clamp(a, ip0, ip1))
/* One bound: a NaN self or bound (None) compares false and self stays. */
XR_PW(CLAMP_MIN, "clamp_min", SAME, "self", "min=None", 1, a < p0 ? p0 : a, a < ip0 ? ip0 : a)
XR_PW(CLAMP_MAX, "clamp_max", SAME, "self", "max=None", 1, a > p0 ? p0 : a, a > ip0 ? ip0 : a)
XR_PW(LOGICAL_NOT, "logical_not", LOGIC, "self", "", 1, B(a == K(0)), a == 0)
XR_PW(BITWISE_NOT, "bitwise_not", BITS, "self", "", 1, 0, boolean ? !a : ~a)
/* binary */
XR_PW(REMAINDER, "remainder", SAME, "self,other", "", 3,
      pw_fmod(a, b) != K(0) && (pw_fmod(a, b) < K(0)) != (b < K(0)) ? pw_fmod(a, b) + b
                                                                     : pw_fmod(a, b),
      pw_iremainder(a, b))
XR_PW(FMOD, "fmod", SAME, "self,other", "", 2, pw_fmod(a, b), pw_ifmod(a, b))
XR_PW(POW, "pow", SAME, "self,exponent", "", 8, pw_pow(a, b), pw_ipow(a, b))
XR_PW(FLOAT_POWER, "float_power", FLOAT, "self,exponent", "", 8, pw_pow(a, b), 0)
XR_PW(ATAN2, "atan2", FLOAT, "self,other", "", 8, pw_atan2(a, b), 0)
XR_PW(MAXIMUM, "maximum", SAME, "self,other", "", 1,
      XR_PW_NAN(a) || XR_PW_NAN(b) ? a + b : a > b ? a : b, a > b ? a : b)
XR_PW(MINIMUM, "minimum", SAME, "self,other", "", 1,
      XR_PW_NAN(a) || XR_PW_NAN(b) ? a + b : a < b ? a : b, a < b ? a : b)
XR_PW(FMAX, "fmax", SAME, "self,other", "", 1, pw_fmax(a, b), a > b ? a : b)
XR_PW(FMIN, "fmin", SAME, "self,other", "", 1, pw_fmin(a, b), a < b ? a : b)
XR_PW(HYPOT, "hypot", FLOAT, "self,other", "", 4, pw_hypot(a, b), 0)
XR_PW(COPYSIGN, "copysign", FLOAT, "self,other", "", 1, pw_copysign(a, b), 0)
XR_PW(XLOGY, "xlogy", FLOAT, "self,other", "", 5,
      XR_PW_NAN(b) ? b : a == K(0) ? K(0) : a * pw_log(b), 0)
XR_PW(EQ, "eq", CMP, "self,other", "", 1, B(a == b), a == b)
XR_PW(NE, "ne", CMP, "self,other", "", 1, B(a != b), a != b)
XR_PW(LT, "lt", CMP, "self,other", "", 1, B(a < b), a < b)
XR_PW(LE, "le", CMP, "self,other", "", 1, B(a <= b), a <= b)
XR_PW(GT, "gt", CMP, "self,other", "", 1, B(a > b), a > b)
XR_PW(GE, "ge", CMP, "self,other", "", 1, B(a >= b), a >= b)
XR_PW(LOGICAL_AND, "logical_and", LOGIC, "self,other", "", 1, B(a != K(0) && b != K(0)), a && b)
XR_PW(LOGICAL_OR, "logical_or", LOGIC, "self,other", "", 1, B(a != K(0) || b != K(0)), a || b)
XR_PW(LOGICAL_XOR, "logical_xor", LOGIC, "self,other", "", 1, B((a != K(0)) != (b != K(0))),
      (a != 0) != (b != 0))
XR_PW(BITWISE_AND, "bitwise_and", BITS, "self,other", "", 1, 0, a & b)
XR_PW(BITWISE_OR, "bitwise_or", BITS, "self,other", "", 1, 0, a | b)
XR_PW(BITWISE_XOR, "bitwise_xor", BITS, "self,other", "", 1, 0, a ^ b)
XR_PW(BITWISE_LEFT_SHIFT, "bitwise_left_shift", BITS, "self,other", "", 1, 0, pw_ishl(a, b))
XR_PW(BITWISE_RIGHT_SHIFT, "bitwise_right_shift", BITS, "self,other", "", 1, 0, pw_ishr(a, b))
/* threshold(self, threshold, value): x <= threshold becomes value. */
XR_PW(THRESHOLD, "threshold", SAME, "self", "threshold=0,value=0", 1, a > p0 ? a : p1,
      a > ip0 ? a : ip1)
XR_PW(THRESHOLD_BACKWARD, "threshold_backward", SAME, "grad_output,self", "threshold=0", 1,
      b > p0 ? a : K(0), b > ip0 ? a : 0)
XR_PW(TANH_BACKWARD, "tanh_backward", FLOAT, "grad_output,output", "", 3, a * (K(1) - b * b), 0)
XR_PW(SIGMOID_BACKWARD, "sigmoid_backward", FLOAT, "grad_output,output", "", 3,
      a * b * (K(1) - b), 0)
XR_PW(SILU_BACKWARD, "silu_backward", FLOAT, "grad_output,self", "", 8,
      a * (K(1) / (K(1) + pw_exp(-b))) * (K(1) + b * (K(1) - K(1) / (K(1) + pw_exp(-b)))), 0)
/* ternary */
XR_PW(WHERE, "where", SAME, "condition~,self,other", "", 1, a != K(0) ? b : c, a != 0 ? b : c)
XR_PW(MASKED_FILL, "masked_fill", SELF, "self,mask~,value", "", 1, b != K(0) ? c : a,
      b != 0 ? c : a)
/* lerp as torch computes it: from the nearer end for weights of at least 0.5. */
XR_PW(LERP, "lerp", FLOAT, "self,end,weight", "", 3,
      pw_fabs(c) < K(0.5) ? a + c * (b - a) : b - (b - a) * (K(1) - c), 0)
XR_PW(ADDCMUL, "addcmul", SAME, "self,tensor1,tensor2", "value=1", 3, a + p0 * b * c,
      pw_imul(pw_imul(ip0, b), c) + a)
XR_PW(ADDCDIV, "addcdiv", FLOAT, "self,tensor1,tensor2", "value=1", 3, a + p0 * b / c, 0)
#undef XR_PW_NAN
#undef pw_clamp
#ifdef XR_PW_INF_DEFAULT
#undef XR_PW_INF
#undef XR_PW_INF_DEFAULT
#endif
#endif
