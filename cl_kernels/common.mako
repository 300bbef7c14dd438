//CL//
## Shared prelude for every clperiod kernel.
##
## Render parameters (all required, strict_undefined):
##   real    -- "float" or "double": the arithmetic type of the kernel
##
## Provides: the fp64 pragma (only for double kernels), the ``real_t`` typedef,
## ``REAL_NEG_INF``, ``KAHAN_ADD`` (compensated summation) and the
## range-reduced ``sincos_cycles`` below. ``reduce_angle(type)`` is emitted on
## request (Kepler's equation, the RV kernels' mean anomalies).
<%!
    from clperiod.engine.angles import CODY_WAITE_LIMIT, INV_TWO_PI_WORDS, TWO_PI_HI, TWO_PI_LO
%>
<%def name="prelude(real)">
% if real == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
typedef ${real} real_t;
#define REAL_NEG_INF (-INFINITY)
#define TWO_PI_R ((real_t) 6.283185307179586476925286766559)
// Kahan-compensated accumulation: sum += x, with the running rounding error
// kept in comp (the build must not use -cl-fast-relaxed-math / -cl-unsafe-math).
#define KAHAN_ADD(sum, comp, x) do { \
        const real_t kahan_y = (x) - (comp); \
        const real_t kahan_t = (sum) + kahan_y; \
        (comp) = (kahan_t - (sum)) - kahan_y; \
        (sum) = kahan_t; \
    } while (0)
${sincos_cycles(real)}
</%def>

## sin(2*pi*r), cos(2*pi*r) for |r| <= 0.5 (r in cycles, already reduced).
## Quadrant reduction to |x| <= 1/8 cycle, then Taylor polynomials in theta =
## 2*pi*x (|theta| <= pi/4) whose truncation error is below half an ulp of the
## type: degree 9/10 for float, 17/18 for double.
<%def name="sincos_cycles(real)">
<%
    import math
    n_sin, n_cos = (5, 6) if real == "float" else (9, 10)
    sin_coeffs = [(-1) ** j / math.factorial(2 * j + 1) for j in range(n_sin)]
    cos_coeffs = [(-1) ** j / math.factorial(2 * j) for j in range(n_cos)]
    suffix = "f" if real == "float" else ""
%>
inline void sincos_cycles(const real_t r, real_t *s_out, real_t *c_out)
{
    const real_t q = rint(4 * r);
    const real_t th = TWO_PI_R * (r - (real_t) 0.25 * q);
    const real_t th2 = th * th;
    real_t ps = (real_t) ${repr(sin_coeffs[-1])}${suffix};
% for a in reversed(sin_coeffs[:-1]):
    ps = ps * th2 + (real_t) ${repr(a)}${suffix};
% endfor
    real_t pc = (real_t) ${repr(cos_coeffs[-1])}${suffix};
% for a in reversed(cos_coeffs[:-1]):
    pc = pc * th2 + (real_t) ${repr(a)}${suffix};
% endfor
    const real_t s = ps * th;
    const real_t c = pc;
    const int quadrant = ((int) q) & 3;
    *s_out = quadrant == 0 ? s : quadrant == 1 ? c : quadrant == 2 ? -s : -c;
    *c_out = quadrant == 0 ? c : quadrant == 1 ? -s : quadrant == 2 ? -c : s;
}
</%def>

## reduce_angle(type): ``type reduce_angle_<type>(type x)`` = x - 2 pi k in
## [-pi, pi] (k the nearest integer to x / 2 pi) for any finite x of type
## "float" or "double", within about an ulp of the exact reduction of x
## (clperiod.engine.angles.reduce_angle does the same on the host). Small |x|: a
## two-part 2 pi (Cody-Waite; k * HI exact). Larger: Payne-Hanek, x = mant
## 2^expo times the bits of 1 / (2 pi) from 2^-(expo + 1) on (the bits above
## give whole turns), in 64-bit integers; the 128-bit fraction of a turn is
## off by less than 2^-127, far below the smallest |x mod 2 pi| of any
## float64 (~2^-61 relative).
<%def name="reduce_angle(type)">
<%
    double = type == "double"
    f = "" if double else "f"
    # k * HI exact below the limit: double HI has 30 bits, float HI 8 (k < 2^16;
    # k * LO's missing bits stay below 1/6 ulp of pi up to 2^11)
    hi, lo = (repr(TWO_PI_HI), repr(TWO_PI_LO)) if double else ("6.28125", "0.0019353072")
    limit = float(CODY_WAITE_LIMIT) if double else 2.0**11
%>
#ifndef CLPERIOD_INV_TWO_PI_WORDS
#define CLPERIOD_INV_TWO_PI_WORDS
// 1 / (2 pi) in 64-bit words from the binary point, after one zero word
// (clperiod.engine.angles.INV_TWO_PI_WORDS)
__constant ulong INV_TWO_PI_WORDS[${len(INV_TWO_PI_WORDS)}] = {
% for i in range(0, len(INV_TWO_PI_WORDS), 4):
    ${", ".join(f"0x{w:016x}UL" for w in INV_TWO_PI_WORDS[i:i + 4])},
% endfor
};

// 64 bits of the table from bit `first` (0 = the top bit of the zero word)
inline ulong inv_two_pi_window(const int first)
{
    const int word = first >> 6, shift = first & 63;
    const ulong high = INV_TWO_PI_WORDS[word] << shift;
    return shift ? high | (INV_TWO_PI_WORDS[word + 1] >> (64 - shift)) : high;
}

// |mant 2^expo| / (2 pi) less its integer part, in turns (mant < 2^53,
// -64 <= expo <= 971): the fraction of mant (W0 2^-64 + W1 2^-128 + W2 2^-192)
// as a 128-bit fixed-point number (a, b) = a 2^-64 + b 2^-128
inline ulong2 payne_hanek_turns(const ulong mant, const int expo)
{
    const int first = expo + 64;
    const ulong w0 = inv_two_pi_window(first), w1 = inv_two_pi_window(first + 64),
                w2 = inv_two_pi_window(first + 128);
    const ulong lo1 = mant * w1;
    const ulong b = lo1 + mul_hi(mant, w2);
    const ulong a = mant * w0 + mul_hi(mant, w1) + (b < lo1 ? 1UL : 0UL);
    return (ulong2) (a, b);
}

// the magnitude of a fixed-point fraction of a turn (a, b) centred on 0:
// a fraction of 1/2 or more (top bit set) stands for minus (1 - fraction)
inline ulong2 centred_turns(const ulong2 turns)
{
    return (turns.x >> 63) != 0
        ? (ulong2) (~turns.x + (turns.y == 0 ? 1UL : 0UL), ~turns.y + 1UL) : turns;
}
#endif

inline ${type} reduce_angle_${type}(const ${type} x)
{
    const ${type} k = rint(x * (${type}) 0.15915494309189533577${f});
    if (fabs(x) < (${type}) ${repr(limit)}${f})
        return (x - k * (${type}) ${hi}${f}) - k * (${type}) ${lo}${f};
% if double:
    const ulong bits = as_ulong(fabs(x));
    const ulong2 turns = payne_hanek_turns((bits & 0xFFFFFFFFFFFFFUL) | 0x10000000000000UL,
                                           (int) (bits >> 52) - 1075);
% else:
    const uint bits = as_uint(fabs(x));
    const ulong2 turns = payne_hanek_turns((ulong) ((bits & 0x7FFFFFu) | 0x800000u),
                                           (int) (bits >> 23) - 150);
% endif
    const bool negative = (turns.x >> 63) != 0;
    const ulong2 size = centred_turns(turns);
% if double:
    const double fraction = convert_double(size.x) * 0x1p-64 + convert_double(size.y) * 0x1p-128;
% else:
    const float fraction = convert_float(size.x) * 0x1p-64f
                           + convert_float(size.y >> 32) * 0x1p-96f;
% endif
    const ${type} m = fraction * (${type}) 6.283185307179586476925${f};
    return (x < 0) != negative ? -m : m;
}
</%def>

## Work-group arg-max over (value, index) pairs held in local memory.
## Larger value wins; equal values: the smaller index wins (first maximum);
## NaN never wins. Leaves the winner in slot 0. ``n`` must be a power of two
## and equal the work-group size.
<%def name="argmax_pairs(n)">
inline void wg_argmax(__local real_t *val, __local int *idx, const int lid)
{
% for stride in [2 ** p for p in reversed(range(n.bit_length() - 1))]:
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < ${stride}) {
        const real_t v2 = val[lid + ${stride}];
        const int i2 = idx[lid + ${stride}];
        const real_t v1 = val[lid];
        if (v2 > v1 || (v2 == v1 && i2 < idx[lid])) {
            val[lid] = v2;
            idx[lid] = i2;
        }
    }
% endfor
    barrier(CLK_LOCAL_MEM_FENCE);
}
</%def>

## fold_phase(real, compat, arbitrary): phase in [0, 1) of grid index k at
## point g, in cycles, for the fold-and-sort kernels, plus FOLD_ARGS (the
## kernel parameters it reads) and FOLD(g, k) (the call). Times are relative
## to the object's earliest one. fp64 forms frac(t f) with an exact FMA
## residual; fp32 the double-single inputs a + k (bh + bl) of
## FrequencyGrid.phase_inputs (~1e-7-cycle phases for any epoch). compat
## reproduces the reference code: fmod(t, P) / P with P = 1 / f in the
## kernel's type. arbitrary reads f of index k from the array grid_f (fp32:
## the float pairs grid_fh + grid_fl, times pt_th + pt_tl, whose product is
## formed in double-single) instead of fmin + k df.
<%def name="fold_phase(real, compat=False, arbitrary=False)">
% if arbitrary and real == "float" and not compat:
#define FOLD_ARGS __global const float *restrict pt_th, __global const float *restrict pt_tl, \
                  __global const float *restrict grid_fh, __global const float *restrict grid_fl
#define FOLD(g, k) fold_phase(pt_th, pt_tl, grid_fh, grid_fl, (g), (k))
inline float fold_phase(__global const float *pt_th, __global const float *pt_tl,
                        __global const float *grid_fh, __global const float *grid_fl,
                        const int g, const int k)
{
    // (fh + fl)(th + tl) in double-single: p + e is fh th exactly
    const float fh = grid_fh[k], th = pt_th[g];
    const float p = fh * th;
    const float e = fma(fh, th, -p);
    float r = (p - floor(p)) + (e + fma(fh, pt_tl[g], grid_fl[k] * th));
    r -= floor(r);
% elif real == "float" and not compat:
#define FOLD_ARGS __global const float *restrict pt_a, __global const float *restrict pt_bh, \
                  __global const float *restrict pt_bl
#define FOLD(g, k) fold_phase(pt_a, pt_bh, pt_bl, (g), (k))
inline float fold_phase(__global const float *pt_a, __global const float *pt_bh,
                        __global const float *pt_bl, const int g, const int k)
{
    const float kf = (float) k;
    const float bh = pt_bh[g];
    const float p = kf * bh;
    const float e = fma(kf, bh, -p);
    float r = (p - floor(p)) + (e + fma(kf, pt_bl[g], pt_a[g]));
    r -= floor(r);
% else:
%   if arbitrary:
#define FOLD_ARGS __global const real_t *restrict pt_t, __global const real_t *restrict grid_f
#define FOLD(g, k) fold_phase(pt_t, grid_f, (g), (k))
inline real_t fold_phase(__global const real_t *pt_t, __global const real_t *grid_f,
                         const int g, const int k)
{
    const real_t f = grid_f[k];
%   else:
#define FOLD_ARGS __global const real_t *restrict pt_t, const real_t grid_fmin, \
                  const real_t grid_df
#define FOLD(g, k) fold_phase(pt_t, grid_fmin, grid_df, (g), (k))
inline real_t fold_phase(__global const real_t *pt_t, const real_t fmin, const real_t df,
                         const int g, const int k)
{
    const real_t f = fmin + (real_t) k * df;
%   endif
    const real_t tt = pt_t[g];
  % if compat:
    const real_t period = 1 / f;
    real_t r = fmod(tt, period) / period;
  % else:
    real_t r = fma(tt, f, -floor(tt * f));
  % endif
% endif
    // rounding can leave r just outside [0, 1)
    if (r < 0)
        r += 1;
    if (r >= 1)
        r -= 1;
    return r;
}
</%def>

## Packed 64-bit sort keys: phase in the high bits, the point's index in the
## low ``index_bits`` bits, so ordering keys is a stable sort by phase. fp32
## phases keep all their bits; fp64 ones keep 64 - index_bits bits (phases
## closer than 2^(index_bits - 64) cycles count as ties).
<%def name="phase_keys(real, index_bits)">
<% scale = repr(2.0 ** (64 - index_bits)) %>
#define KEY_INDEX_BITS ${index_bits}
#define KEY_INDEX(key) ((int) ((key) & ((1UL << KEY_INDEX_BITS) - 1)))
% if real == "float":
#define PHASE_KEY(ph, i) (((ulong) as_uint(ph) << 32) | (ulong) (i))
#define KEY_PHASE(key) as_float((uint) ((key) >> 32))
% else:
#define PHASE_KEY(ph, i) ((convert_ulong((ph) * ${scale}) << KEY_INDEX_BITS) | (ulong) (i))
#define KEY_PHASE(key) ((double) ((key) >> KEY_INDEX_BITS) / ${scale})
% endif
</%def>
