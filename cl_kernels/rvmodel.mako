//CL//
## Keplerian radial-velocity models and their goodness of fit (Ford 2009).
##
## Render parameters (strict_undefined):
##   real        "float" | "double": Kepler solve, velocities and sums
##   phase       "double" | "ds" | "float" | "float_device": arithmetic of
##               the orbital phase (t - t_origin) / P + phi0 in cycles, phi0
##               the phase at t_origin (within the data's span); "double"
##               forms phi0 from the parameters, "ds" (double-single, float2
##               hi + lo) and "float" read (1/P, phi0) from per-planet
##               coefficients that the host computes in float64;
##               "float_device" forms (1/P, phi0) in double as "double" does
##               (parameters in double) and rounds them to float once per
##               model and planet for a float phase per observation
##   n_planets   planets per model (unrolled)
##   ecc_form    "e_w" | "secosw_sesinw"   (params[2], params[3])
##   time_form   "m0" | "tp" | "tc"         (params[4]; used by "double" and
##               "float_device" only)
##   n_inst      instruments (observations are sorted by instrument; seg[i]
##               .. seg[i+1] is instrument i)
##   statistic   "chi2" | "loglike" | "profile"
##   offsets     per-model offset per instrument (offsets[model][inst])
##   jitter      per-model jitter per instrument, added in quadrature
##   trend       0, 1, 2: polynomial degree in (t - t_ref), trend[model][2]
##   space       "constant" | "local" | "global": where observations are read
##   method      "danby" | "markley": Kepler solver (kepler.mako)
##   result      "float" | "double": type of the results out, out_k and
##               out_gamma ("double" with real == "float" rounds nothing:
##               the float values are stored exactly, so the host need not
##               widen them)
##
## Layouts (Ford 2009 sec. 4.4): ``rv_fused`` computes everything with one
## work-item per model; ``rv_velocity`` (one work-item per model and block
## of observations, writing vel[obs][model]) followed by ``rv_statistic``
## (one work-item per model) is the split layout, and ``rv_velocity`` alone
## serves clperiod.kepler.radial_velocity.
##
## obs_w holds 1/sigma^2 without jitter and sigma^2 with it. "profile"
## treats the last planet's K and every instrument offset as linear
## parameters and returns their weighted least-squares values with the
## minimum chi^2 (the other planets, the trend and the jitter are fixed).
## With real == "float" every sum is Kahan-compensated: the build must not
## use -cl-fast-relaxed-math / -cl-unsafe-math-optimizations.
##
## Phases of barycentric times (~2.46e6 d) lose nothing to cancellation: the
## observation times are t - t_origin, and phi0 = (t_origin - epoch) / P +
## M_epoch / 2 pi less whole turns (epoch t_ref with M_epoch = M0, tp with 0,
## tc with the mean anomaly at conjunction) comes from the epoch difference
## taken exactly as a double-double, whole periods removed before the
## division (turns_between), and M0 reduced at rounding level (reduce_angle).
## This runs once per model and planet, outside the loop over observations.
<%namespace name="common" file="common.mako"/>
<%namespace name="kepler" file="kepler.mako"/>
% if (phase in ("double", "float_device") or result == "double") and real == "float":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
${common.prelude(real)}
typedef ${result} result_t;
${kepler.solver(real)}
${kepler.markley(real)}
% if phase in ("double", "float_device"):
${common.reduce_angle("double")}

// (a - b) / per less whole turns, within 0.75 of 0 (2 of 0 beyond 2^50
// periods), to a few 1e-16 for any finite a, b and per > 0: a - b exact as
// d + d_lo (two-sum), whole periods removed before the division (an fma
// with one rounding, or the exact fmod for huge ratios)
inline double turns_between(const double a, const double b, const double per,
                            const double inv_per)
{
    const double d = a - b;
    const double back = d - a;
    const double d_lo = (a - (d - back)) - (b + back);
    const double q = d * inv_per;
    if (fabs(q) < 0x1p50)
        return (fma(-rint(q), per, d) + d_lo) * inv_per;
    return (fmod(d, per) + fmod(d_lo, per)) * inv_per;
}
% endif
<%
    fp_real = real == "double"
    device_phi0 = phase in ("double", "float_device")   # phi0 formed from the parameters
    ptype = "double" if device_phi0 else "float"   # parameter arithmetic
    ttype = {"double": "double", "ds": "float2", "float": "float", "float_device": "float"}[phase]
    profile = statistic == "profile"
    log_variances = statistic == "loglike" and jitter   # sum of log(sigma^2 + jitter^2)
    space_q = {"constant": "__constant", "local": "__local", "global": "__global"}[space]
    planets = range(n_planets)
    last = n_planets - 1
    kahan = not fp_real
%>
typedef ${ptype} param_t;
typedef ${ttype} time_t;
#define N_PLANETS ${n_planets}
#define N_INST ${n_inst}
#define PARAM_INV_TWO_PI ((param_t) 0.15915494309189533577)

// model status codes (clperiod.kepler.ModelStatus)
#define MODEL_OK 0
#define MODEL_BAD_PARAMETERS 1
#define MODEL_NOT_CONVERGED 2
#define MODEL_DEGENERATE 3

% if kahan:
#define ACC(sum, comp, x) KAHAN_ADD(sum, comp, x)
% else:
#define ACC(sum, comp, x) ((sum) += (x))
% endif

## ---------------------------------------------------------------- planets
## Per-planet constants of one model in registers: e_j, a_j, b_j (velocity
## (a cos E + b sin E) / (1 - e cos E)), and the phase coefficients.
<%def name="planet_setup()">
    int state = MODEL_OK;
% for j in planets:
    const param_t per_${j} = pm[${5 * j}], amp_${j} = pm[${5 * j + 1}];
    const param_t pa_${j} = pm[${5 * j + 2}], pb_${j} = pm[${5 * j + 3}];
  % if device_phi0:
    const param_t tau_${j} = pm[${5 * j + 4}];
  % endif
  % if ecc_form == "e_w":
    const param_t ecc_${j} = pa_${j};
    param_t cw_${j};
    const param_t sw_${j} = sincos(pb_${j}, &cw_${j});
  % else:
    const param_t ecc_${j} = pa_${j} * pa_${j} + pb_${j} * pb_${j};
    const param_t root_${j} = sqrt(ecc_${j});
    const param_t cw_${j} = root_${j} > 0 ? pa_${j} / root_${j} : (param_t) 1;
    const param_t sw_${j} = root_${j} > 0 ? pb_${j} / root_${j} : (param_t) 0;
  % endif
    const param_t sq_${j} = sqrt((1 - ecc_${j}) * (1 + ecc_${j}));
  % if device_phi0:
    const param_t inv_p_${j} = 1 / per_${j};
    % if time_form == "m0":
    const param_t phi0_${j} = turns_between(t_origin, t_ref, per_${j}, inv_p_${j})
                              + reduce_angle_double(tau_${j}) * PARAM_INV_TWO_PI;
    % elif time_form == "tp":
    const param_t phi0_${j} = turns_between(t_origin, tau_${j}, per_${j}, inv_p_${j});
    % else:
    // mean anomaly at conjunction (f = pi/2 - w: cos E = (e + sin w) / (1 + e sin w))
    const param_t econj_${j} = atan2(sq_${j} * cw_${j}, ecc_${j} + sw_${j});
    const param_t mconj_${j} = econj_${j}
                               - ecc_${j} * sq_${j} * cw_${j} / (1 + ecc_${j} * sw_${j});
    const param_t phi0_${j} = turns_between(t_origin, tau_${j}, per_${j}, inv_p_${j})
                              + mconj_${j} * PARAM_INV_TWO_PI;
    % endif
    % if phase == "float_device":
    // 1/P and phi0 in [-0.5, 0.5] rounded once, as the host rounds them for "float"
    const float inv_pf_${j} = (float) inv_p_${j};
    const float phi0f_${j} = (float) (phi0_${j} - rint(phi0_${j}));
    % endif
  % else:
    const float4 phc_${j} = coeff[model * N_PLANETS + ${j}];
    % if phase == "float":
    const param_t inv_p_${j} = phc_${j}.x, phi0_${j} = phc_${j}.z;
    % endif
  % endif
  ## "ds" and "float" read no epoch from params (their float32 copy may overflow)
  <% epoch = f"tau_{j}" if device_phi0 else f"phc_{j}.z" %>
    if (!(per_${j} > 0 && isfinite(per_${j}) && isfinite(amp_${j}) && isfinite(${epoch})
          && isfinite(pb_${j}) && ecc_${j} >= 0 && ecc_${j} < 1))
        state = MODEL_BAD_PARAMETERS;
  <% unit = profile and j == last %>
    const real_t e_${j} = (real_t) ecc_${j};
    const real_t a_${j} = (real_t) (${"" if unit else f"amp_{j} * "}sq_${j} * sq_${j} * cw_${j});
    const real_t b_${j} = (real_t) (-${"" if unit else f"amp_{j} * "}sq_${j} * sw_${j});
% endfor
</%def>

## Mean anomaly in [-pi, pi] of planet j at observation time tk.
<%def name="mean_anomaly(j)">
  % if phase == "ds":
        const float p_hi_${j} = tk.x * phc_${j}.x;
        const float p_lo_${j} = fma(tk.x, phc_${j}.x, -p_hi_${j}) + fma(tk.x, phc_${j}.y, tk.y * phc_${j}.x);
        const float n_${j} = rint(p_hi_${j} + phc_${j}.z);
        const float x_${j} = ((p_hi_${j} - n_${j}) + phc_${j}.z) + (p_lo_${j} + phc_${j}.w);
        const real_t m_${j} = (x_${j} - rint(x_${j})) * TWO_PI_R;
  % elif phase == "float_device":
        const float ph_${j} = fma(tk, inv_pf_${j}, phi0f_${j});
        const real_t m_${j} = (ph_${j} - rint(ph_${j})) * TWO_PI_R;
  % else:
        const param_t ph_${j} = fma(tk, inv_p_${j}, phi0_${j});
        const real_t m_${j} = (real_t) (ph_${j} - rint(ph_${j})) * TWO_PI_R;
  % endif
</%def>

## Sum of the planets' velocities at tk into `vsum` (without the last planet
## in profile mode, whose unit-amplitude velocity goes to `gk`).
<%def name="planet_velocities()">
        real_t vsum = 0, vcomp = 0;
% if profile:
        real_t gk;
% endif
% for j in planets:
        {
${mean_anomaly(j)}
            real_t big_e, s, c;
            if (${"kepler_sincos_markley" if method == "markley" else "kepler_sincos"}(m_${j}, e_${j}, &big_e, &s, &c) != KEPLER_OK
                && state == MODEL_OK)
                state = MODEL_NOT_CONVERGED;
            const real_t vj = (a_${j} * c + b_${j} * s) / (1 - e_${j} * c);
  % if profile and j == last:
            gk = vj;
  % else:
            ACC(vsum, vcomp, vj);
  % endif
        }
% endfor
        vsum -= vcomp;
</%def>

## ---------------------------------------------------------------- statistic
<%def name="statistic_loop(source)">
    // totals over instruments
% if profile:
    real_t sum_a[N_INST], sum_b[N_INST], sum_g[N_INST];
    real_t num = 0, den = 0, base = 0;
% else:
    real_t chi = 0, chi_c = 0;
% endif
% if log_variances:
    real_t logs = 0, logs_c = 0;
% endif
#pragma unroll
    for (int i = 0; i < N_INST; ++i) {
% if offsets:
        const real_t gamma = offsets[model * N_INST + i];
% else:
        const real_t gamma = 0;
% endif
% if jitter:
        const real_t jit = jitter[model * N_INST + i];
        const real_t jit2 = jit * jit;
        if (!isfinite(jit))
            state = MODEL_BAD_PARAMETERS;
% endif
% if offsets:
        if (!isfinite(gamma))
            state = MODEL_BAD_PARAMETERS;
% endif
% if profile:
        real_t sa = 0, sa_c = 0, sb = 0, sb_c = 0, sg = 0, sg_c = 0;
        real_t sd = 0, sd_c = 0, sh = 0, sh_c = 0, sc = 0, sc_c = 0;
% endif
        for (int k = seg[i]; k < seg[i + 1]; ++k) {
% if source == "planets" or trend:
            const time_t tk = obs_t[k];
% endif
% if source == "planets":
${planet_velocities()}
% else:
            const real_t vsum = vel[(long) k * stride + model];
  % if profile:
            const real_t gk = gvel[(long) k * stride + model];
  % endif
% endif
% if trend:
  <%
      tt = "tk.x" if phase == "ds" else "tk"
      shift = "shift_f" if phase == "float_device" else "trend_shift"
  %>
            const real_t dt = (real_t) (${tt} + ${shift});   // t - t_ref
            const real_t known = vsum + gamma + dt * (tr_1${" + dt * tr_2" if trend == 2 else ""});
% else:
            const real_t known = vsum + gamma;
% endif
            const real_t r = obs_v[k] - known;
% if jitter:
            const real_t var = obs_w[k] + jit2;
            const real_t w = 1 / var;
  % if log_variances:
            ACC(logs, logs_c, log(var));
  % endif
% else:
            const real_t w = obs_w[k];
% endif
% if profile:
            const real_t wr = w * r, wg = w * gk;
            ACC(sa, sa_c, w);
            ACC(sb, sb_c, wr);
            ACC(sg, sg_c, wg);
            ACC(sd, sd_c, wg * r);
            ACC(sh, sh_c, wg * gk);
            ACC(sc, sc_c, wr * r);
% else:
            ACC(chi, chi_c, w * r * r);
% endif
        }
% if profile:
        sa -= sa_c; sb -= sb_c; sg -= sg_c; sd -= sd_c; sh -= sh_c; sc -= sc_c;
        sum_a[i] = sa; sum_b[i] = sb; sum_g[i] = sg;
        const real_t inv_a = sa > 0 ? 1 / sa : 0;   // an empty instrument adds nothing
        base += sc - sb * sb * inv_a;
        num += sd - sb * sg * inv_a;
        den += sh - sg * sg * inv_a;
% endif
    }
% if profile:
    const real_t k_hat = num / den;
    if (!(den > 0) && state == MODEL_OK)
        state = MODEL_DEGENERATE;
    const bool good = state == MODEL_OK;
    out[model] = (result_t) (good ? base - num * k_hat : (real_t) NAN);
    out_k[model] = (result_t) (good ? k_hat : (real_t) NAN);
#pragma unroll
    for (int i = 0; i < N_INST; ++i)
        out_gamma[model * N_INST + i] = (result_t) (good && sum_a[i] > 0
            ? (sum_b[i] - k_hat * sum_g[i]) / sum_a[i] : (real_t) NAN);
% else:
    chi -= chi_c;
  % if log_variances:
    logs -= logs_c;
  % endif
    const bool good = state == MODEL_OK;
  % if statistic == "loglike":
    out[model] = (result_t) (good
        ? (real_t) -0.5 * (chi + ${"logs + " if log_variances else ""}log_norm) : (real_t) NAN);
  % else:
    out[model] = (result_t) (good ? chi : (real_t) NAN);
  % endif
% endif
    status[model] = state;
</%def>

<%def name="trend_setup()">
% if trend:
    const real_t tr_1 = trend[2 * model];
  % if trend == 2:
    const real_t tr_2 = trend[2 * model + 1];
  % else:
    const real_t tr_2 = 0;
  % endif
    if (!isfinite(tr_1) || !isfinite(tr_2))
        state = MODEL_BAD_PARAMETERS;
  % if phase == "float_device":
    const float shift_f = (float) trend_shift;   // float times, as "float"
  % endif
% endif
</%def>

## Observation arguments; with space == "local" the kernel copies them from
## global memory into __local arrays passed by the host.
<%def name="observation_args()">
% if space == "local":
    __global const time_t *restrict g_obs_t,
    __global const real_t *restrict g_obs_v,
    __global const real_t *restrict g_obs_w,
    __global const int *restrict g_seg,
    const int n_obs,
    __local time_t *restrict obs_t,
    __local real_t *restrict obs_v,
    __local real_t *restrict obs_w,
    __local int *restrict seg,
% else:
    ${space_q} const time_t *restrict obs_t,
    ${space_q} const real_t *restrict obs_v,
    ${space_q} const real_t *restrict obs_w,
    ${space_q} const int *restrict seg,
    const int n_obs,
% endif
</%def>

<%def name="load_observations()">
% if space == "local":
    for (int k = (int) get_local_id(0); k < n_obs; k += (int) get_local_size(0)) {
        obs_t[k] = g_obs_t[k];
        obs_v[k] = g_obs_v[k];
        obs_w[k] = g_obs_w[k];
    }
    for (int k = (int) get_local_id(0); k <= N_INST; k += (int) get_local_size(0))
        seg[k] = g_seg[k];
    barrier(CLK_LOCAL_MEM_FENCE);
% endif
</%def>

<%def name="model_args()">
    const int n_models,
    __global const param_t *restrict params,
    __global const float4 *restrict coeff,
    const param_t t_origin,
    const param_t t_ref,
    const param_t trend_shift,
    __global const real_t *restrict offsets,
    __global const real_t *restrict jitter,
    __global const real_t *restrict trend,
</%def>

__kernel void rv_fused(
${model_args()}
    const real_t log_norm,
${observation_args()}
    __global result_t *restrict out,
    __global result_t *restrict out_k,
    __global result_t *restrict out_gamma,
    __global int *restrict status)
{
${load_observations()}
    const int model = (int) get_global_id(0);
    if (model >= n_models)
        return;
    __global const param_t *pm = params + (long) model * (5 * N_PLANETS);
${planet_setup()}
${trend_setup()}
${statistic_loop("planets")}
}

// vel[k][model] = Keplerian velocity sum (profile: without the last planet,
// whose unit-amplitude velocity goes to gvel) for the observations of block
// get_global_id(1) of `block` observations.
__kernel void rv_velocity(
${model_args()}
    __global const time_t *restrict obs_t,
    const int n_obs,
    const int block,
    const long stride,
    __global real_t *restrict vel,
    __global real_t *restrict gvel,
    __global int *restrict status)   // zero-filled by the host
{
    const int model = (int) get_global_id(0);
    if (model >= n_models)
        return;
    __global const param_t *pm = params + (long) model * (5 * N_PLANETS);
${planet_setup()}
    const int k0 = (int) get_global_id(1) * block;
    const int k1 = min(n_obs, k0 + block);
    for (int k = k0; k < k1; ++k) {
        const time_t tk = obs_t[k];
${planet_velocities()}
        vel[(long) k * stride + model] = state == MODEL_OK ? vsum : (real_t) NAN;
% if profile:
        gvel[(long) k * stride + model] = gk;
% endif
    }
    if (state != MODEL_OK)
        atomic_max(status + model, state);
}

__kernel void rv_statistic(
${model_args()}
    const real_t log_norm,
${observation_args()}
    const long stride,
    __global const real_t *restrict vel,
    __global const real_t *restrict gvel,
    __global result_t *restrict out,
    __global result_t *restrict out_k,
    __global result_t *restrict out_gamma,
    __global int *restrict status)
{
${load_observations()}
    const int model = (int) get_global_id(0);
    if (model >= n_models)
        return;
    int state = status[model];
${trend_setup()}
${statistic_loop("buffer")}
}
