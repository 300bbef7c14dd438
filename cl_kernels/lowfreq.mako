//CL//
## Gram matrices of the exact low-frequency fits' stable basis
## (clperiod.periodograms.lowfreq, module notes): the estimates of the
## low-frequency cutoffs solve their normal equations on the host.
##
## Render parameters (strict_undefined):
##   nterms  harmonics K of the model (>= 1)
##   wg      work-group size (power of two)
##
## One work-group per request (object, frequency f). With cycles
## c = f t - rint(f t) (t: times from the object's mid epoch), the versine
## v = 2 sin^2(pi c), v_max its largest value over the object's points,
## x = 2 v / v_max - 1 and s = sin(2 pi c), the columns are
## sqrt(w) T_0(x) .. sqrt(w) T_K(x), sqrt(w) s T_0(x) .. sqrt(w) s T_{K-1}(x)
## and sqrt(w) u (the values): C = 2 K + 2 of them. The request's row of
## `gram` holds the upper triangle of their Gram matrix by rows
## (C (C + 1) / 2 sums), and `v_max` the largest versine.
<%namespace name="common" file="common.mako"/>
${common.prelude("double")}
<%
    columns = 2 * nterms + 2
    pairs = [(a, b) for a in range(columns) for b in range(a, columns)]
%>
#define WG ${wg}

inline double reduce_sum(double value, __local double *scratch)
{
    const int lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    scratch[lid] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void lowfreq_gram(
    __global const double *restrict t,
    __global const double *restrict sw,
    __global const double *restrict su,
    __global const long *restrict offsets,
    __global const int *restrict objects,
    __global const double *restrict frequencies,
    __global double *restrict gram,
    __global double *restrict v_max)
{
    const int lid = get_local_id(0);
    const int request = get_group_id(0);
    const int object = objects[request];
    const long first = offsets[object], stop = offsets[object + 1];
    const double f = frequencies[request];
    __local double scratch[WG];

    double largest = 0.0;
    for (long i = first + lid; i < stop; i += WG) {
        double cycles = f * t[i];
        cycles -= rint(cycles);
        const double sine = sinpi(cycles);
        largest = fmax(largest, 2.0 * sine * sine);
    }
    scratch[lid] = largest;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            scratch[lid] = fmax(scratch[lid], scratch[lid + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    largest = scratch[0];
    const double scale = largest > 0.0 ? 2.0 / largest : 0.0;

% for a, b in pairs:
    double g${a}_${b} = 0.0;
% endfor
    for (long i = first + lid; i < stop; i += WG) {
        double cycles = f * t[i];
        cycles -= rint(cycles);
        const double sine = sinpi(cycles);
        const double x = 2.0 * sine * sine * scale - 1.0;
        const double weight = sw[i];
        const double odd = weight * sinpi(2.0 * cycles);
        double previous = 1.0, current = x;
        const double col0 = weight;
% for j in range(1, nterms + 1):
        const double col${j} = weight * current;
        {
            const double next = 2.0 * x * current - previous;
            previous = current;
            current = next;
        }
% endfor
## T_j for the odd columns again from T_0: s T_0 .. s T_{K-1}
        previous = 1.0;
        current = x;
% for j in range(nterms):
        const double col${nterms + 1 + j} = odd * previous;
        {
            const double next = 2.0 * x * current - previous;
            previous = current;
            current = next;
        }
% endfor
        const double col${columns - 1} = su[i];
% for a, b in pairs:
        g${a}_${b} += col${a} * col${b};
% endfor
    }
    __global double *row = gram + (long) request * ${len(pairs)};
% for k, (a, b) in enumerate(pairs):
    {
        const double total = reduce_sum(g${a}_${b}, scratch);
        if (lid == 0)
            row[${k}] = total;
    }
% endfor
    if (lid == 0)
        v_max[request] = largest;
}
