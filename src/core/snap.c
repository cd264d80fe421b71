/* Engine snapshots: the whole mutable state of an engine as bytes, and a new
 * engine made from them (tide_engine_snapshot / tide_engine_restore). Every
 * struct is written member by member from a field table (no padding bytes),
 * so two engines in the same state give the same bytes. The header carries a
 * format version and a fingerprint of the tables and struct sizes (another
 * build's layout is refused), then the engine's shape (cluster, config,
 * services): a snapshot restores only into an engine of the same shape.
 * Scratch (victim lists, reservations, the job id index) is rebuilt. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "util/bytes.h"

/* TIDE_FIELD, refused at compile time when the field ends past 64 KiB of
 * its struct: tide_field_t's offsets are 16-bit (a larger forecast_t once
 * wrapped the offsets of the service fields after it, and a restored
 * engine lost its replica counts). */
#define F(T, f)                                                                                \
    {(uint16_t)(offsetof(T, f) +                                                               \
                0 * sizeof(char[offsetof(T, f) + sizeof(((T *)0)->f) <= 65535 ? 1 : -1])),    \
     (uint16_t)sizeof(((T *)0)->f)}
#define NF TIDE_NFIELDS

static const char snap_magic[8] = {'T', 'I', 'D', 'E', 'E', 'N', 'G', 0};

/* ---------------------------------------------------------------- tables */


static const tide_field_t cfg_f[] = {
    F(tide_config_t, reserve_gpus), F(tide_config_t, split_inf), F(tide_config_t, night_start_h),
    F(tide_config_t, night_end_h), F(tide_config_t, margin_min), F(tide_config_t, margin_max),
    F(tide_config_t, slo_target), F(tide_config_t, slo_window_s), F(tide_config_t, slo_period_s),
    F(tide_config_t, tick_s), F(tide_config_t, lead_extra_s), F(tide_config_t, lease_max_s),
    F(tide_config_t, scale_down_hold_s), F(tide_config_t, forecast_bucket_s),
    F(tide_config_t, forecast_days), F(tide_config_t, backfill_depth), F(tide_config_t, fairshare),
    F(tide_config_t, fairshare_half_life_s), F(tide_config_t, warm_start),
    F(tide_config_t, headroom), F(tide_config_t, hpa_window_s), F(tide_config_t, sizing_ensemble),
    F(tide_config_t, obs_window_s),
    F(tide_config_t, spread_max_skew), F(tide_config_t, survive_share)};

static const tide_field_t svc_spec_f[] = {
    F(tide_service_spec_t, gpus_per_replica), F(tide_service_spec_t, replica_rps),
    F(tide_service_spec_t, min_replicas), F(tide_service_spec_t, max_replicas),
    F(tide_service_spec_t, warmup_s), F(tide_service_spec_t, gpu_types),
    F(tide_service_spec_t, fixed_replicas), F(tide_service_spec_t, slo_target),
    F(tide_service_spec_t, stage_s)};

static const tide_field_t node_shape_f[] = {F(node_t, domain), F(node_t, gpus),
                                            F(node_t, first_gpu)};
static const tide_field_t node_f[] = {F(node_t, up), F(node_t, foreign_want), F(node_t, foreign),
                                      F(node_t, cut)};

static const tide_field_t dom_shape_f[] = {F(domain_t, first_node), F(domain_t, n_nodes),
                                           F(domain_t, first_gpu), F(domain_t, gpus),
                                           F(domain_t, type), F(domain_t, rack),
                                           F(domain_t, power)};
static const tide_field_t dom_f[] = {
    F(domain_t, zone), F(domain_t, up_gpus), F(domain_t, free), F(domain_t, claim_kind),
    F(domain_t, claim_id), F(domain_t, claim_n), F(domain_t, claim_since), F(domain_t, borrowed),
    F(domain_t, foreign), F(domain_t, free_slot), F(domain_t, cut_held)};

/* The power model of each GPU type (tide_engine_set_power_model changes it). */
static const tide_field_t pm_f[] = {
    F(tide_power_model_t, tdp_w),      F(tide_power_model_t, idle_w),
    F(tide_power_model_t, serve_idle_w), F(tide_power_model_t, serve_full_w),
    F(tide_power_model_t, train_w),    F(tide_power_model_t, ckpt_w),
    F(tide_power_model_t, min_cap_w),  F(tide_power_model_t, n_curve),
    F(tide_power_model_t, curve_frac), F(tide_power_model_t, curve_speed)};

static const tide_field_t engine_f[] = {
    F(tide_engine_t, laid_out), F(tide_engine_t, zone_gpus), F(tide_engine_t, zone_free),
    F(tide_engine_t, zone_total), F(tide_engine_t, zone_foreign), F(tide_engine_t, queue_gpus),
    F(tide_engine_t, start), F(tide_engine_t, now), F(tide_engine_t, started),
    F(tide_engine_t, next_tick), F(tide_engine_t, sched_dirty), F(tide_engine_t, infer_dirty),
    F(tide_engine_t, hold_dirty),
    F(tide_engine_t, cnt), F(tide_engine_t, orc_v), F(tide_engine_t, orc_width),
    F(tide_engine_t, declared_ckpt_max), F(tide_engine_t, quotas_on),
    F(tide_engine_t, next_deadline), F(tide_engine_t, reserve_target),
    F(tide_engine_t, reserve_short), F(tide_engine_t, reserve_dirty), F(tide_engine_t, need_t0),
    F(tide_engine_t, need_avail), F(tide_engine_t, ret_lead), F(tide_engine_t, min_term),
    F(tide_engine_t, orc_useful), F(tide_engine_t, orc_debt), F(tide_engine_t, pw_train_w),
    F(tide_engine_t, pw_capped), F(tide_engine_t, grow_at), F(tide_engine_t, n_cut),
    F(tide_engine_t, zone_cut)};

static const tide_field_t stats_f[] = {
    F(tide_stats_t, start), F(tide_stats_t, now), F(tide_stats_t, cluster_gpus),
    F(tide_stats_t, gpu_s), F(tide_stats_t, useful_serving_gpu_s), F(tide_stats_t, oracle_gpu_s),
    F(tide_stats_t, requests_demanded), F(tide_stats_t, requests_served),
    F(tide_stats_t, idle_while_queued_gpu_s), F(tide_stats_t, jobs_submitted),
    F(tide_stats_t, jobs_completed), F(tide_stats_t, jobs_running), F(tide_stats_t, jobs_queued),
    F(tide_stats_t, preemptions), F(tide_stats_t, shrinks), F(tide_stats_t, lost_gpu_s),
    F(tide_stats_t, reclaims), F(tide_stats_t, reclaims_late), F(tide_stats_t, leases_expired),
    F(tide_stats_t, leases_granted), F(tide_stats_t, borrowed_gpu_s),
    F(tide_stats_t, tier_a_breach_gpu_s), F(tide_stats_t, tier_a_target_gpus),
    F(tide_stats_t, tier_a_short_gpus), F(tide_stats_t, gpus_now), F(tide_stats_t, queue_jobs),
    F(tide_stats_t, queue_gpus), F(tide_stats_t, demand_rps), F(tide_stats_t, ready_rps),
    F(tide_stats_t, replicas_ready), F(tide_stats_t, replicas_warming),
    F(tide_stats_t, energy_serving_j), F(tide_stats_t, energy_training_j),
    F(tide_stats_t, energy_idle_j), F(tide_stats_t, energy_other_j), F(tide_stats_t, power_caps),
    F(tide_stats_t, power_stops), F(tide_stats_t, power_held), F(tide_stats_t, power_breaches),
    F(tide_stats_t, capped_gpu_s), F(tide_stats_t, power_excess_w),
    F(tide_stats_t, power_capped_gpus)};

static const tide_field_t job_spec_f[] = {
    F(tide_job_spec_t, priority), F(tide_job_spec_t, gpus), F(tide_job_spec_t, gang_gpus),
    F(tide_job_spec_t, dp_min), F(tide_job_spec_t, submit_s), F(tide_job_spec_t, duration_s),
    F(tide_job_spec_t, ckpt_interval_s), F(tide_job_spec_t, ckpt_s), F(tide_job_spec_t, restore_s),
    F(tide_job_spec_t, gpu_types)};

static const tide_field_t job_f[] = {
    F(job_t, team), F(job_t, cls), F(job_t, dp_max), F(job_t, state), F(job_t, phase),
    F(job_t, width), F(job_t, progress), F(job_t, progress_at), F(job_t, committed),
    F(job_t, submitted), F(job_t, first_start), F(job_t, finished), F(job_t, run_start),
    F(job_t, notice_at), F(job_t, deadline), F(job_t, preemptions), F(job_t, lost_gpu_s),
    F(job_t, lease), F(job_t, n_leased), F(job_t, acct_state), F(job_t, acct_tier_own),
    F(job_t, tr_c), F(job_t, tr_d), F(job_t, tr_at), F(job_t, run_idx), F(job_t, exp_end),
    F(job_t, reclaim_reason), F(job_t, stop_pending), F(job_t, in_lease_order),
    F(job_t, cap_w), F(job_t, speed), F(job_t, cap_tot), F(job_t, pw_w), F(job_t, pw_at), F(job_t, grow_after),
    F(job_t, held)};

static const tide_field_t rep_f[] = {F(replica_t, service), F(replica_t, state),
                                     F(replica_t, tier), F(replica_t, started),
                                     F(replica_t, ready_at), F(replica_t, notice_at),
                                     F(replica_t, rehearsal), F(replica_t, cut),
                                     F(replica_t, credit)};

static const tide_field_t cap_tot_f[] = {F(cap_tot_t, capped_s), F(cap_tot_t, delay_s),
                                         F(cap_tot_t, energy_j)};
static const tide_field_t lease_f[] = {
    F(lease_t, job), F(lease_t, gpus), F(lease_t, start), F(lease_t, latest_return),
    F(lease_t, term_start), F(lease_t, ckpt_cost), F(lease_t, can_shrink), F(lease_t, noticed),
    F(lease_t, returned), F(lease_t, late)};

static const tide_field_t lkey_f[] = {F(struct lease_key, prio), F(struct lease_key, shrink),
                                      F(struct lease_key, cost), F(struct lease_key, h),
                                      F(struct lease_key, lease), F(struct lease_key, n_leased)};
static const tide_field_t dl_f[] = {F(struct deadline_ent, t), F(struct deadline_ent, h)};

static const tide_field_t lc_f[] = {F(lc_t, n), F(lc_t, t), F(lc_t, acc)};

static const tide_field_t samples_f[] = {F(samples_t, win), F(samples_t, win_n),
                                         F(samples_t, win_pos), F(samples_t, fresh),
                                         F(samples_t, q99)};

static const tide_field_t svc_f[] = {
    F(service_t, demand), F(service_t, ready), F(service_t, warming), F(service_t, down_since),
    F(service_t, hold_max), F(service_t, hold.t), F(service_t, hold.v), F(service_t, hold.first),
    F(service_t, hold.n), F(service_t, react), F(service_t, react_at), F(service_t, slo_target),
    F(service_t, short_since), F(service_t, short_ready), F(service_t, late),
    F(service_t, late_n), F(service_t, late_pos), F(service_t, late_extra),
    F(service_t, orc_need), F(service_t, rh_want), F(service_t, rh_rep), F(service_t, rh_done),
    F(service_t, rh_slow), F(service_t, rh_failed), F(service_t, rh_last),
    F(service_t, rh_allowed), F(service_t, rh_at), F(service_t, surge), F(service_t, target)};

static const tide_field_t fc_f[] = {
    F(forecast_t, peak_seen), F(forecast_t, peak_dirty), F(forecast_t, last_bucket),
    F(forecast_t, first_bucket), F(forecast_t, filled), F(forecast_t, last_t), F(forecast_t, cur),
    F(forecast_t, have), F(forecast_t, err_day), F(forecast_t, err_week), F(forecast_t, bw),
    F(forecast_t, bs_n), F(forecast_t, bs_pos), F(forecast_t, pred_n), F(forecast_t, pred_pos),
    F(forecast_t, q), F(forecast_t, margin), F(forecast_t, dem_d), F(forecast_t, miss_d),
    F(forecast_t, logk), F(forecast_t, dem_p), F(forecast_t, miss_p), F(forecast_t, dur_p),
    F(forecast_t, dem_new), F(forecast_t, miss_new), F(forecast_t, fb_at), F(forecast_t, fb_on),
    F(forecast_t, samples), F(forecast_t, ens_n), F(forecast_t, ens_pos), F(forecast_t, ens_cost), F(forecast_t, ens_last),
    F(forecast_t, ens_miss), F(forecast_t, ens_dem), F(forecast_t, ens_dur), F(forecast_t, ens_at),
    F(forecast_t, ens_durp),
    F(forecast_t, ens_pick)};

static const tide_field_t fcs_f[] = {F(fc_sample_t, bin), F(fc_sample_t, w)};
static const tide_field_t pred_f[] = {F(struct fc_pred, t), F(struct fc_pred, base),
                                      F(struct fc_pred, q), F(struct fc_pred, rule)};
static const tide_field_t ens_f[] = {F(struct fc_ens_prop, t), F(struct fc_ens_prop, dem),
                                     F(struct fc_ens_prop, need)};
static const tide_field_t ensc_f[] = {F(struct fc_ens_cf, rdy), F(struct fc_ens_cf, claim),
                                      F(struct fc_ens_cf, claim_t), F(struct fc_ens_cf, warm),
                                      F(struct fc_ens_cf, warm_t), F(struct fc_ens_cf, warm_pos)};
static const tide_field_t hpa_f[] = {F(struct hpa_rec, t), F(struct hpa_rec, n)};
static const tide_field_t orc_f[] = {F(oracle_job_t, vf), F(oracle_job_t, gpus),
                                     F(oracle_job_t, useful)};

static const tide_field_t team_f[] = {
    F(team_t, gpu_s), F(team_t, gpu_s_at), F(team_t, lost_gpu_s), F(team_t, preemptions), F(team_t, jobs),
    F(team_t, gpus_now), F(team_t, queue_started_s), F(team_t, waiting),
    F(team_t, waiting_submit_sum), F(team_t, weight), F(team_t, has_quota),
    F(team_t, borrow_limit), F(team_t, lend_cap), F(team_t, dusage), F(team_t, dusage_at)};

/* Members deliberately left out of the tables above: pointers and counts
 * written by hand, the shape, scratch and caches rebuilt on restore. */
static const tide_field_t cfg_skip[] __attribute__((unused)) = {F(tide_config_t, policy),
                                        F(tide_config_t, check_invariants)};
static const tide_field_t svc_spec_skip[] __attribute__((unused)) = {F(tide_service_spec_t, name)};
static const tide_field_t job_spec_skip[] __attribute__((unused)) = {F(tide_job_spec_t, id), F(tide_job_spec_t, team)};
static const tide_field_t job_skip[] __attribute__((unused)) = {F(job_t, spec), F(job_t, alloc),
                                                                  F(job_t, lent_counted)};
static const tide_field_t rep_skip[] __attribute__((unused)) = {F(replica_t, alloc)};
static const tide_field_t samples_skip[] __attribute__((unused)) = {F(samples_t, v), F(samples_t, n), F(samples_t, cap)};
static const tide_field_t svc_skip[] __attribute__((unused)) = {F(service_t, spec), F(service_t, fc), F(service_t, warm),
                                        F(service_t, hpa), F(service_t, hpa_n),
                                        F(service_t, hpa_cap), F(service_t, cells),
                                        F(service_t, orc_off), F(service_t, orc_off_cap),
                                        F(service_t, spread), F(service_t, claimed),
                                        F(service_t, warm_ids), F(service_t, n_warm_ids),
                                         F(service_t, cap_warm_ids), F(service_t, acct_dem),
                                         F(service_t, acct_need), F(service_t, pw_model),
                                         F(service_t, live_ids), F(service_t, n_live_ids),
                                         F(service_t, cap_live_ids), F(service_t, live_ok)};
static const tide_field_t fc_skip[] __attribute__((unused)) = {
    F(forecast_t, nb), F(forecast_t, days), F(forecast_t, bucket_s), F(forecast_t, sum),
    F(forecast_t, dur), F(forecast_t, mx), F(forecast_t, bs), F(forecast_t, bs_cap),
    F(forecast_t, pred), F(forecast_t, bin_c), F(forecast_t, shape_v), F(forecast_t, shape_tag),
    F(forecast_t, ens_prop), F(forecast_t, ens_cf),
    /* memo: fresh (invalid) in a restored engine */
    F(forecast_t, ver), F(forecast_t, now_memo), F(forecast_t, bw_nz), F(forecast_t, bw_nz_ok),
    F(forecast_t, mx_blk), F(forecast_t, mx_blk_ok)};
static const tide_field_t team_skip[] __attribute__((unused)) = {F(team_t, name), F(team_t, quota), F(team_t, used),
                                         F(team_t, cells)};
static const tide_field_t engine_skip[] __attribute__((unused)) = {
    F(tide_engine_t, cluster), F(tide_engine_t, cfg), F(tide_engine_t, pol),
    F(tide_engine_t, nodes), F(tide_engine_t, n_nodes), F(tide_engine_t, doms),
    F(tide_engine_t, n_doms), F(tide_engine_t, n_gpus), F(tide_engine_t, max_dom_gpus),
    F(tide_engine_t, n_racks), F(tide_engine_t, n_power),
    F(tide_engine_t, gpu_dom), F(tide_engine_t, own_kind), F(tide_engine_t, own_id),
    F(tide_engine_t, jobs), F(tide_engine_t, n_jobs), F(tide_engine_t, cap_jobs),
    F(tide_engine_t, cap_tots), F(tide_engine_t, n_cap_tots), F(tide_engine_t, cap_cap_tots),
    F(tide_engine_t, job_ids), F(tide_engine_t, job_blk), F(tide_engine_t, n_job_blk),
    F(tide_engine_t, cap_job_blk),
    F(tide_engine_t, idx_slots), F(tide_engine_t, idx_cap), F(tide_engine_t, svcs),
    F(tide_engine_t, n_svcs), F(tide_engine_t, cap_svcs), F(tide_engine_t, reps),
    F(tide_engine_t, n_reps), F(tide_engine_t, cap_reps), F(tide_engine_t, leases),
    F(tide_engine_t, n_leases), F(tide_engine_t, cap_leases), F(tide_engine_t, teams),
    F(tide_engine_t, n_teams), F(tide_engine_t, cap_teams), F(tide_engine_t, q),
    F(tide_engine_t, qn), F(tide_engine_t, qcap), F(tide_engine_t, running),
    F(tide_engine_t, n_running), F(tide_engine_t, cap_running), F(tide_engine_t, by_end),
    F(tide_engine_t, n_by_end), F(tide_engine_t, cap_by_end), F(tide_engine_t, by_end_t),
    F(tide_engine_t, by_end_lo), F(tide_engine_t, st),
    F(tide_engine_t, orc), F(tide_engine_t, orc_n), F(tide_engine_t, orc_cap),
    F(tide_engine_t, smp), F(tide_engine_t, n_types), F(tide_engine_t, foreign_cells),
    F(tide_engine_t, reserve_type), F(tide_engine_t, need_curve), F(tide_engine_t, need_n),
    F(tide_engine_t, need_vals), F(tide_engine_t, lease_order),
    F(tide_engine_t, cap_lease_order), F(tide_engine_t, scratch_a), F(tide_engine_t, scratch_b),
    F(tide_engine_t, scratch_c), F(tide_engine_t, vict_cand), F(tide_engine_t, vict_v),
    F(tide_engine_t, vict_best), F(tide_engine_t, vict_used), F(tide_engine_t, resv),
    F(tide_engine_t, n_resv), F(tide_engine_t, out), F(tide_engine_t, n_lease_order),
    F(tide_engine_t, n_lease_dead),
    F(tide_engine_t, cap_empty), F(tide_engine_t, plan_cost), F(tide_engine_t, plan_ok),
    F(tide_engine_t, dom_free_bits), F(tide_engine_t, dom_words), F(tide_engine_t, dl),
    F(tide_engine_t, n_dl), F(tide_engine_t, cap_dl), F(tide_engine_t, lease_merge),
    F(tide_engine_t, cap_lease_merge), F(tide_engine_t, n_pdom), F(tide_engine_t, power_on),
    F(tide_engine_t, gpu_pdom), F(tide_engine_t, pw_w), F(tide_engine_t, pw_b),
    F(tide_engine_t, pw_n), F(tide_engine_t, pw_idle_mean), F(tide_engine_t, pw_train_mean),
    F(tide_engine_t, grow_slots), F(tide_engine_t, renew_new), F(tide_engine_t, n_renew_new),
    F(tide_engine_t, cap_renew_new), F(tide_engine_t, renew_rescan),
    F(tide_engine_t, renew_mark), F(tide_engine_t, cap_renew_mark),
    F(tide_engine_t, lw_min), F(tide_engine_t, cap_lw), F(tide_engine_t, lw_mt),
    F(tide_engine_t, need_pmax), F(tide_engine_t, cap_need_pmax),
    /* memos: zero after a restore, so the first pass recomputes */
    F(tide_engine_t, resv_memo), F(tide_engine_t, resv_pend), F(tide_engine_t, qk), F(tide_engine_t, qkcap),
    F(tide_engine_t, tq), F(tide_engine_t, cap_tq), F(tide_engine_t, qshapes), F(tide_engine_t, n_qshapes),
    F(tide_engine_t, cap_qshapes), F(tide_engine_t, qs_live), F(tide_engine_t, n_qs_live),
    F(tide_engine_t, cap_qs_live), F(tide_engine_t, q_team_n), F(tide_engine_t, cap_q_team_n),
    F(tide_engine_t, q_teams), F(tide_engine_t, fs_order), F(tide_engine_t, fs_rank),
    F(tide_engine_t, fs_score), F(tide_engine_t, fs_n), F(tide_engine_t, cap_fs), F(tide_engine_t, jdom), F(tide_engine_t, jdomcap),
    F(tide_engine_t, place_ver), F(tide_engine_t, memo_bad),
    F(tide_engine_t, n_claimed), F(tide_engine_t, cnt_nz),
    F(tide_engine_t, plan_clock), F(tide_engine_t, dom_ver), F(tide_engine_t, plan_ch),
    /* derived from the running jobs (tide__lent_rebuild) */
    F(tide_engine_t, lent_run)};

/* Every table and the sizes of the structs they describe: a build whose
 * layout differs writes another fingerprint. */
static uint64_t layout_fingerprint(void)
{
    static const struct {
        const tide_field_t *f;
        size_t n;
    } t[] = {{cfg_f, NF(cfg_f)},       {svc_spec_f, NF(svc_spec_f)}, {node_shape_f, NF(node_shape_f)},
             {node_f, NF(node_f)},     {dom_shape_f, NF(dom_shape_f)}, {dom_f, NF(dom_f)},
             {engine_f, NF(engine_f)}, {stats_f, NF(stats_f)},     {job_spec_f, NF(job_spec_f)},
             {job_f, NF(job_f)},       {rep_f, NF(rep_f)},         {lease_f, NF(lease_f)},
             {lc_f, NF(lc_f)},         {samples_f, NF(samples_f)}, {svc_f, NF(svc_f)},
             {fc_f, NF(fc_f)},         {fcs_f, NF(fcs_f)},         {pred_f, NF(pred_f)},
             {hpa_f, NF(hpa_f)},       {orc_f, NF(orc_f)},         {team_f, NF(team_f)},
             {lkey_f, NF(lkey_f)},     {dl_f, NF(dl_f)},           {pm_f, NF(pm_f)},
             {cap_tot_f, NF(cap_tot_f)}};
    static const size_t sizes[] = {sizeof(tide_config_t), sizeof(tide_service_spec_t),
                                   sizeof(node_t), sizeof(domain_t), sizeof(tide_engine_t),
                                   sizeof(tide_stats_t), sizeof(tide_job_spec_t), sizeof(job_t),
                                   sizeof(replica_t), sizeof(lease_t), sizeof(lc_t),
                                   sizeof(samples_t), sizeof(service_t), sizeof(forecast_t),
                                   sizeof(team_t), sizeof(oracle_job_t), sizeof(alloc_t),
                                   sizeof(cap_tot_t)};
    uint64_t h = TIDE_FNV_INIT;
    for (size_t i = 0; i < NF(t); i++)
        h = tide_hash_bytes(h, t[i].f, t[i].n * sizeof *t[i].f);
    return tide_hash_bytes(h, sizes, sizeof sizes);
}

/* Arrays of structs: count, then each element by its table. */
static void w_structs(tide_wbuf_t *b, const void *v, size_t n, size_t size, const tide_field_t *f,
                      size_t nf)
{
    tide_w_u64(b, n);
    for (size_t i = 0; i < n; i++)
        tide_w_struct(b, (const char *)v + i * size, f, nf);
}

/* Read n elements (exactly `want` when want >= 0) into a new array (or into
 * `into` when given). */
static void *r_structs(tide_rbuf_t *r, void *into, size_t *n, long want, size_t size,
                       const tide_field_t *f, size_t nf)
{
    *n = tide_r_count(r, tide_fields_size(f, nf), SIZE_MAX);
    if (want >= 0 && *n != (size_t)want) {
        r->bad = 1;
        *n = 0;
    }
    char *v = into ? into : tide_xcalloc(*n ? *n : 1, size);
    for (size_t i = 0; i < *n; i++)
        tide_r_struct(r, v + i * size, f, nf);
    return v;
}

/* ------------------------------------------------------------------ shape */

/* What must be equal between the snapshot's engine and the one it restores
 * into: cluster topology, configuration, services. */
static void w_shape(tide_wbuf_t *b, const tide_engine_t *e)
{
    tide_w_str(b, e->cfg.policy);
    tide_w_struct(b, &e->cfg, cfg_f, NF(cfg_f));
    tide_w_u64(b, (uint64_t)e->n_gpus);
    tide_w_u64(b, (uint64_t)e->n_types);
    w_structs(b, e->nodes, (size_t)e->n_nodes, sizeof *e->nodes, node_shape_f, NF(node_shape_f));
    w_structs(b, e->doms, (size_t)e->n_doms, sizeof *e->doms, dom_shape_f, NF(dom_shape_f));
    tide_w_u64(b, (uint64_t)e->n_svcs);
    for (int s = 0; s < e->n_svcs; s++) {
        tide_w_str(b, e->svcs[s].spec.name);
        tide_w_struct(b, &e->svcs[s].spec, svc_spec_f, NF(svc_spec_f));
    }
}

/* ------------------------------------------------------------------ write */

static void w_alloc(tide_wbuf_t *b, const alloc_t *a)
{
    tide_w_arr(b, a->gpus, (size_t)a->n, sizeof *a->gpus);
}

static void w_samples(tide_wbuf_t *b, const samples_t *s)
{
    tide_w_struct(b, s, samples_f, NF(samples_f));
    tide_w_arr(b, s->v, s->n, sizeof *s->v);
}

static void w_forecast(tide_wbuf_t *b, const forecast_t *f)
{
    size_t ring = (size_t)f->nb * (size_t)(f->days + 1);
    tide_w_struct(b, f, fc_f, NF(fc_f));
    tide_w_arr(b, f->sum, ring, sizeof *f->sum);
    tide_w_arr(b, f->dur, ring, sizeof *f->dur);
    tide_w_arr(b, f->mx, ring, sizeof *f->mx);
    w_structs(b, f->bs, f->bs_cap, sizeof *f->bs, fcs_f, NF(fcs_f));
    w_structs(b, f->pred, FC_PRED_RING, sizeof f->pred[0], pred_f, NF(pred_f));
    w_structs(b, f->ens_prop, ENS_RING, sizeof f->ens_prop[0], ens_f, NF(ens_f));
    w_structs(b, f->ens_cf, ENS_RULES, sizeof f->ens_cf[0], ensc_f, NF(ensc_f));
}

static void w_service(tide_wbuf_t *b, const tide_engine_t *e, const service_t *s)
{
    tide_w_struct(b, s, svc_f, NF(svc_f));
    w_forecast(b, &s->fc);
    w_samples(b, &s->warm);
    w_structs(b, s->hpa, s->hpa_n, sizeof *s->hpa, hpa_f, NF(hpa_f));
    tide_w_arr(b, s->orc_off, s->orc_off_cap, sizeof *s->orc_off);
    w_structs(b, s->cells, (size_t)TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types,
              sizeof *s->cells, lc_f, NF(lc_f));
}

static void w_team(tide_wbuf_t *b, const tide_engine_t *e, const team_t *t)
{
    tide_w_str(b, t->name);
    tide_w_struct(b, t, team_f, NF(team_f));
    tide_w_arr(b, t->quota, (size_t)e->n_types, sizeof *t->quota);
    tide_w_arr(b, t->used, (size_t)e->n_types, sizeof *t->used);
    w_structs(b, t->cells, (size_t)TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT * (size_t)e->n_types,
              sizeof *t->cells, lc_f, NF(lc_f));
}

static void w_jobs(tide_wbuf_t *b, const tide_engine_t *e)
{
    tide_w_u64(b, e->n_jobs);
    for (size_t h = 0; h < e->n_jobs; h++) {
        const job_t *j = e->jobs[h];
        tide_w_str(b, j->spec.id);
        tide_w_str(b, j->spec.team);
        tide_w_struct(b, &j->spec, job_spec_f, NF(job_spec_f));
        tide_w_struct(b, j, job_f, NF(job_f));
        w_alloc(b, &j->alloc);
    }
}

static void w_state(tide_wbuf_t *b, const tide_engine_t *e)
{
    tide_w_struct(b, e, engine_f, NF(engine_f));
    tide_w_struct(b, &e->st, stats_f, NF(stats_f));
    w_structs(b, e->nodes, (size_t)e->n_nodes, sizeof *e->nodes, node_f, NF(node_f));
    w_structs(b, e->doms, (size_t)e->n_doms, sizeof *e->doms, dom_f, NF(dom_f));
    tide_w_arr(b, e->own_kind, (size_t)e->n_gpus, sizeof *e->own_kind);
    tide_w_arr(b, e->own_id, (size_t)e->n_gpus, sizeof *e->own_id);
    w_jobs(b, e);
    for (int s = 0; s < e->n_svcs; s++)
        w_service(b, e, &e->svcs[s]);
    tide_w_u64(b, e->n_reps);
    for (size_t r = 0; r < e->n_reps; r++) {
        tide_w_struct(b, &e->reps[r], rep_f, NF(rep_f));
        w_alloc(b, &e->reps[r].alloc);
    }
    w_structs(b, e->leases, e->n_leases, sizeof *e->leases, lease_f, NF(lease_f));
    w_structs(b, e->cap_tots, e->n_cap_tots, sizeof *e->cap_tots, cap_tot_f, NF(cap_tot_f));
    tide_w_u64(b, (uint64_t)e->n_teams);
    for (int t = 0; t < e->n_teams; t++)
        w_team(b, e, &e->teams[t]);
    for (int p = 0; p < TIDE_NPRIO; p++)
        tide_w_arr(b, e->q[p], e->qn[p], sizeof *e->q[p]);
    tide_w_arr(b, e->running, e->n_running, sizeof *e->running);
    tide_w_arr(b, e->by_end, e->n_by_end, sizeof *e->by_end);
    w_structs(b, e->orc, e->orc_n, sizeof *e->orc, orc_f, NF(orc_f));
    for (int k = 0; k < TIDE_SAMPLE_COUNT; k++)
        w_samples(b, &e->smp[k]);
    w_structs(b, e->foreign_cells, (size_t)TIDE_T_COUNT * (size_t)e->n_types,
              sizeof *e->foreign_cells, lc_f, NF(lc_f));
    tide_w_arr(b, e->reserve_type, e->reserve_type ? (size_t)e->n_types : 0,
               sizeof *e->reserve_type);
    tide_w_arr(b, e->need_curve, (size_t)e->need_n, sizeof *e->need_curve);
    /* the indexes that carry order: the renewal order, the deadline heap
     * (with its stale entries) and the free-domain bitmaps */
    /* less the keys marked dropped (lease -1) that lease.c has not removed yet */
    struct lease_key *lo = tide_xmalloc((e->n_lease_order + 1) * sizeof *lo);
    size_t nlo = 0;
    for (size_t i = 0; i < e->n_lease_order; i++)
        if (e->lease_order[i].lease >= 0)
            lo[nlo++] = e->lease_order[i];
    w_structs(b, lo, nlo, sizeof *lo, lkey_f, NF(lkey_f));
    free(lo);
    w_structs(b, e->dl, e->n_dl, sizeof *e->dl, dl_f, NF(dl_f));
    tide_w_arr(b, e->dom_free_bits, ((size_t)e->max_dom_gpus + 1) * e->dom_words,
               sizeof *e->dom_free_bits);
    int nt = tide_cluster_types(e->cluster);
    tide_w_u64(b, (uint64_t)(nt > 0 ? nt : 0));
    for (int t = 0; t < nt; t++)
        tide_w_struct(b, tide_cluster_power_model(e->cluster, t), pm_f, NF(pm_f));
}

void *tide_engine_snapshot(const tide_engine_t *e, size_t *len)
{
    tide_wbuf_t b = {0};
    tide_w_raw(&b, snap_magic, sizeof snap_magic);
    tide_w_u64(&b, TIDE_SNAPSHOT_VERSION);
    tide_w_u64(&b, layout_fingerprint());
    tide_wbuf_t shape = {0};
    w_shape(&shape, e);
    tide_w_arr(&b, shape.p, shape.n, 1);
    free(shape.p);
    w_state(&b, e);
    *len = b.n;
    return b.p;
}

/* ------------------------------------------------------------------- read */

static void r_alloc(tide_rbuf_t *r, alloc_t *a)
{
    tide__alloc_free(a);
    size_t n;
    a->gpus = tide_r_arr(r, sizeof *a->gpus, &n);
    a->n = (int)n;
    a->cap = n ? (int)TIDE_MIN(n, (size_t)INT32_MAX) : 1;
    if (n > INT32_MAX)
        r->bad = 1;
}

static void r_samples(tide_rbuf_t *r, samples_t *s)
{
    tide_r_struct(r, s, samples_f, NF(samples_f));
    free(s->v);
    s->v = tide_r_arr(r, sizeof *s->v, &s->n);
    s->cap = s->n ? s->n : 1;
    if (s->win_n > SAMPLE_WINDOW || s->win_pos >= SAMPLE_WINDOW)
        r->bad = 1;
}

static void r_forecast(tide_rbuf_t *r, forecast_t *f)
{
    size_t ring = (size_t)f->nb * (size_t)(f->days + 1), n;
    tide_r_struct(r, f, fc_f, NF(fc_f));
    tide_r_fixed(r, f->sum, ring, sizeof *f->sum);
    tide_r_fixed(r, f->dur, ring, sizeof *f->dur);
    tide_r_fixed(r, f->mx, ring, sizeof *f->mx);
    r_structs(r, f->bs, &n, (long)f->bs_cap, sizeof *f->bs, fcs_f, NF(fcs_f));
    r_structs(r, f->pred, &n, FC_PRED_RING, sizeof f->pred[0], pred_f, NF(pred_f));
    r_structs(r, f->ens_prop, &n, ENS_RING, sizeof f->ens_prop[0], ens_f, NF(ens_f));
    r_structs(r, f->ens_cf, &n, ENS_RULES, sizeof f->ens_cf[0], ensc_f, NF(ensc_f));
    for (int k = 0; k < ENS_RULES && !r->bad; k++)
        if (f->ens_cf[k].warm_pos < 0 || f->ens_cf[k].warm_pos >= ENS_WARM)
            r->bad = 1;
    if (f->bs_n > f->bs_cap || f->bs_pos >= f->bs_cap || f->pred_n > FC_PRED_RING ||
        f->pred_pos >= FC_PRED_RING || f->ens_n > ENS_RING || f->ens_pos >= ENS_RING ||
        f->ens_pick < 0 || f->ens_pick >= ENS_RULES)
        r->bad = 1;
}

static void r_service(tide_rbuf_t *r, const tide_engine_t *e, service_t *s)
{
    size_t n;
    tide_r_struct(r, s, svc_f, NF(svc_f));
    r_forecast(r, &s->fc);
    r_samples(r, &s->warm);
    free(s->hpa);
    s->hpa = r_structs(r, NULL, &s->hpa_n, -1, sizeof *s->hpa, hpa_f, NF(hpa_f));
    s->hpa_cap = s->hpa_n ? s->hpa_n : 1;
    free(s->orc_off);
    s->orc_off = tide_r_arr(r, sizeof *s->orc_off, &s->orc_off_cap);
    r_structs(r, s->cells, &n, (long)TIDE_S_COUNT * TIDE_T_COUNT * e->n_types, sizeof *s->cells,
              lc_f, NF(lc_f));
    if (s->hold.first < 0 || s->hold.first >= HOLD_RING || s->hold.n < 0 || s->hold.n > HOLD_RING ||
        s->late_n < 0 || s->late_n > LATE_RING || s->late_pos < 0 || s->late_pos >= LATE_RING)
        r->bad = 1;
}

static void r_teams(tide_rbuf_t *r, tide_engine_t *e)
{
    size_t nt = tide_r_count(r, 1, INT32_MAX), n;
    for (size_t t = 0; t < nt && !r->bad; t++) {
        char *name = tide_r_str(r);
        if (!name) {
            r->bad = 1;
            break;
        }
        int i = tide__team_intern(e, name);
        free(name);
        team_t *tm = &e->teams[i];
        if ((size_t)i != t)
            r->bad = 1; /* a name twice */
        tide_r_struct(r, tm, team_f, NF(team_f));
        tide_r_fixed(r, tm->quota, (size_t)e->n_types, sizeof *tm->quota);
        tide_r_fixed(r, tm->used, (size_t)e->n_types, sizeof *tm->used);
        r_structs(r, tm->cells, &n, (long)TIDE_C_COUNT * TIDE_S_COUNT * TIDE_T_COUNT * e->n_types,
                  sizeof *tm->cells, lc_f, NF(lc_f));
    }
}

static void r_jobs(tide_rbuf_t *r, tide_engine_t *e)
{
    size_t n = tide_r_count(r, 1, INT32_MAX);
    for (size_t h = 0; h < n && !r->bad; h++) {
        job_t *j = tide__job_new(e, e->n_jobs);
        char *id = tide_r_str(r);
        j->spec.id = id ? tide_strpool_dup(&e->job_ids, id) : NULL;
        free(id);
        j->spec.team = tide_r_str(r); /* owned until r_job_teams */
        tide_r_struct(r, &j->spec, job_spec_f, NF(job_spec_f));
        tide_r_struct(r, j, job_f, NF(job_f));
        r_alloc(r, &j->alloc);
        TIDE_PUSH(e->jobs, e->n_jobs, e->cap_jobs, j);
        if (!j->spec.id || !j->spec.team)
            r->bad = 1;
    }
    /* the id index, as the engine builds it */
    free(e->idx_slots);
    e->idx_slots = NULL;
    e->idx_cap = 0;
    size_t cap = 1024;
    while (cap < 2 * e->n_jobs + 2)
        cap *= 2;
    e->idx_slots = tide_xmalloc(cap * sizeof *e->idx_slots);
    for (size_t i = 0; i < cap; i++)
        e->idx_slots[i] = -1;
    e->idx_cap = cap;
    for (size_t h = 0; h < e->n_jobs && !r->bad; h++) {
        size_t i = (size_t)tide_hash_str(e->jobs[h]->spec.id) & (cap - 1);
        while (e->idx_slots[i] >= 0)
            i = (i + 1) & (cap - 1);
        e->idx_slots[i] = (int32_t)h;
    }
}

/* After r_teams: every job's team string becomes its team's name (the
 * engine's rule: a job borrows it); a job whose team index and name disagree
 * makes the snapshot bad. */
static void r_job_teams(tide_rbuf_t *r, tide_engine_t *e)
{
    for (size_t h = 0; h < e->n_jobs && !r->bad; h++) {
        job_t *j = e->jobs[h];
        if (!tide__job_team_owned(e, j))
            continue;
        if (j->team < 0 || j->team >= e->n_teams || strcmp(j->spec.team, e->teams[j->team].name)) {
            r->bad = 1;
            return;
        }
        free((char *)j->spec.team);
        j->spec.team = e->teams[j->team].name;
    }
}

static void r_i32s(tide_rbuf_t *r, int32_t **v, size_t *n, size_t *cap)
{
    free(*v);
    *v = tide_r_arr(r, sizeof **v, n);
    *cap = *n ? *n : 1;
}

/* The power models (as tide_engine_set_power_model left them). */
static void r_power_models(tide_rbuf_t *r, tide_engine_t *e)
{
    int nt = tide_cluster_types(e->cluster);
    if (tide_r_u64(r) != (uint64_t)(nt > 0 ? nt : 0)) {
        r->bad = 1;
        return;
    }
    for (int t = 0; t < nt && !r->bad; t++) {
        tide_power_model_t m = *tide_cluster_power_model(e->cluster, t);
        tide_r_struct(r, &m, pm_f, NF(pm_f));
        if (!r->bad && tide__power_model_restore(e, t, &m) < 0)
            r->bad = 1;
    }
}

static void r_state(tide_rbuf_t *r, tide_engine_t *e)
{
    size_t n;
    tide_r_struct(r, e, engine_f, NF(engine_f));
    tide_r_struct(r, &e->st, stats_f, NF(stats_f));
    r_structs(r, e->nodes, &n, e->n_nodes, sizeof *e->nodes, node_f, NF(node_f));
    r_structs(r, e->doms, &n, e->n_doms, sizeof *e->doms, dom_f, NF(dom_f));
    tide_r_fixed(r, e->own_kind, (size_t)e->n_gpus, sizeof *e->own_kind);
    tide_r_fixed(r, e->own_id, (size_t)e->n_gpus, sizeof *e->own_id);
    r_jobs(r, e);
    for (int s = 0; s < e->n_svcs && !r->bad; s++)
        r_service(r, e, &e->svcs[s]);
    size_t nr = tide_r_count(r, tide_fields_size(rep_f, NF(rep_f)), INT32_MAX);
    for (size_t i = 0; i < nr && !r->bad; i++) {
        replica_t rep = {0};
        tide_r_struct(r, &rep, rep_f, NF(rep_f));
        r_alloc(r, &rep.alloc);
        TIDE_PUSH(e->reps, e->n_reps, e->cap_reps, rep);
    }
    e->leases = r_structs(r, NULL, &e->n_leases, -1, sizeof *e->leases, lease_f, NF(lease_f));
    e->cap_leases = e->n_leases ? e->n_leases : 1;
    free(e->cap_tots);
    e->cap_tots = r_structs(r, NULL, &e->n_cap_tots, -1, sizeof *e->cap_tots, cap_tot_f,
                            NF(cap_tot_f));
    e->cap_cap_tots = e->n_cap_tots ? e->n_cap_tots : 1;
    r_teams(r, e);
    r_job_teams(r, e);
    for (int p = 0; p < TIDE_NPRIO; p++)
        r_i32s(r, &e->q[p], &e->qn[p], &e->qcap[p]);
    r_i32s(r, &e->running, &e->n_running, &e->cap_running);
    r_i32s(r, &e->by_end, &e->n_by_end, &e->cap_by_end);
    free(e->orc);
    e->orc = r_structs(r, NULL, &e->orc_n, -1, sizeof *e->orc, orc_f, NF(orc_f));
    e->orc_cap = e->orc_n ? e->orc_n : 1;
    for (int k = 0; k < TIDE_SAMPLE_COUNT; k++)
        r_samples(r, &e->smp[k]);
    r_structs(r, e->foreign_cells, &n, (long)TIDE_T_COUNT * e->n_types, sizeof *e->foreign_cells,
              lc_f, NF(lc_f));
    free(e->reserve_type);
    e->reserve_type = tide_r_arr(r, sizeof *e->reserve_type, &n);
    if (n != 0 && n != (size_t)e->n_types)
        r->bad = 1;
    if (n == 0) {
        free(e->reserve_type);
        e->reserve_type = NULL;
    }
    free(e->need_curve);
    free(e->need_vals);
    e->need_curve = tide_r_arr(r, sizeof *e->need_curve, &n);
    e->need_vals = tide_xcalloc(n ? n : 1, sizeof *e->need_vals);
    e->need_n = (int)(n <= INT32_MAX ? n : 0);
    free(e->lease_order);
    e->lease_order = r_structs(r, NULL, &e->n_lease_order, -1, sizeof *e->lease_order, lkey_f,
                               NF(lkey_f));
    e->cap_lease_order = e->n_lease_order ? e->n_lease_order : 1;
    e->n_lease_dead = 0;
    free(e->dl);
    e->dl = r_structs(r, NULL, &e->n_dl, -1, sizeof *e->dl, dl_f, NF(dl_f));
    e->cap_dl = e->n_dl ? e->n_dl : 1;
    tide_r_fixed(r, e->dom_free_bits, ((size_t)e->max_dom_gpus + 1) * e->dom_words,
                 sizeof *e->dom_free_bits);
    r_power_models(r, e);
}

/* -------------------------------------------------------------- validate */

static int in(long v, long n) { return v >= 0 && v < n; }

static int alloc_ok(const tide_engine_t *e, const alloc_t *a)
{
    for (int i = 0; i < a->n; i++)
        if (!in(a->gpus[i], e->n_gpus))
            return 0;
    return 1;
}

static int handles_ok(const int32_t *v, size_t n, size_t lim)
{
    for (size_t i = 0; i < n; i++)
        if (!in(v[i], (long)lim))
            return 0;
    return 1;
}

/* Every handle a restored engine follows points inside its arrays (the
 * snapshot's checksum is the store's; this keeps a wrong one from crashing). */
static int handles_valid(const tide_engine_t *e)
{
    long nj = (long)e->n_jobs;
    for (size_t h = 0; h < e->n_jobs; h++) {
        const job_t *j = e->jobs[h];
        if (!in(j->team, e->n_teams) || !alloc_ok(e, &j->alloc) ||
            (j->lease != -1 && !in(j->lease, (long)e->n_leases)) ||
            (j->cap_tot != 0 && !in(j->cap_tot - 1, (long)e->n_cap_tots)) ||
            (j->run_idx != -1 && !in(j->run_idx, (long)e->n_running)))
            return 0;
    }
    for (size_t r = 0; r < e->n_reps; r++)
        if (!in(e->reps[r].service, e->n_svcs) || !alloc_ok(e, &e->reps[r].alloc))
            return 0;
    for (size_t l = 0; l < e->n_leases; l++)
        if (!in(e->leases[l].job, nj))
            return 0;
    for (int p = 0; p < TIDE_NPRIO; p++)
        if (!handles_ok(e->q[p], e->qn[p], e->n_jobs))
            return 0;
    if (!handles_ok(e->running, e->n_running, e->n_jobs) ||
        !handles_ok(e->by_end, e->n_by_end, e->n_jobs))
        return 0;
    for (size_t i = 0; i < e->n_lease_order; i++)
        if (!in(e->lease_order[i].h, nj))
            return 0;
    for (size_t i = 0; i < e->n_dl; i++)
        if (!in(e->dl[i].h, nj))
            return 0;
    for (int d = 0; d < e->n_doms; d++)
        if (e->doms[d].free_slot < 0 || e->doms[d].free_slot > e->max_dom_gpus ||
            !in(e->doms[d].claim_kind, CLAIM_KINDS))
            return 0;
    for (int g = 0; g < e->n_gpus; g++) {
        int k = e->own_kind[g];
        long lim = k == OWN_JOB ? nj : k == OWN_REPLICA ? (long)e->n_reps : e->n_nodes;
        if (k > OWN_FOREIGN || (k != OWN_FREE && !in(e->own_id[g], lim)))
            return 0;
    }
    return 1;
}

/* --------------------------------------------------------------- restore */

/* A new engine of the same cluster, configuration and services as like. */
static tide_engine_t *engine_like(const tide_engine_t *like, tide_error_t *err)
{
    tide_engine_t *e = tide_engine_create(like->cluster, &like->cfg, err);
    for (int s = 0; e && s < like->n_svcs; s++)
        if (tide_engine_add_service(e, &like->svcs[s].spec, err) < 0) {
            tide_engine_destroy(e);
            return NULL;
        }
    return e;
}

/* The header: magic, version, layout, shape. 0 or -1 with err. */
static int header_check(tide_rbuf_t *r, const tide_engine_t *like, tide_error_t *err)
{
    char magic[sizeof snap_magic];
    tide_r_raw(r, magic, sizeof magic);
    if (r->bad || memcmp(magic, snap_magic, sizeof magic))
        return tide_errf(err, TIDE_EINVAL, "engine snapshot: not a tide engine snapshot");
    uint64_t ver = tide_r_u64(r), lay = tide_r_u64(r);
    if (ver != TIDE_SNAPSHOT_VERSION)
        return tide_errf(err, TIDE_EINVAL, "engine snapshot: format version %llu, this build reads %d",
                         (unsigned long long)ver, TIDE_SNAPSHOT_VERSION);
    if (lay != layout_fingerprint())
        return tide_errf(err, TIDE_EINVAL, "engine snapshot: written by a build with another state layout");
    size_t n;
    uint8_t *shape = tide_r_arr(r, 1, &n);
    tide_wbuf_t mine = {0};
    w_shape(&mine, like);
    int same = !r->bad && n == mine.n && !memcmp(shape, mine.p, n);
    free(shape);
    free(mine.p);
    if (!same)
        return tide_errf(err, TIDE_EINVAL,
                         "engine snapshot: another cluster, configuration or set of services");
    return 0;
}

tide_engine_t *tide_engine_restore(const tide_engine_t *like, const void *buf, size_t len,
                                   tide_error_t *err)
{
    tide_rbuf_t r;
    tide_r_init(&r, buf, len);
    if (header_check(&r, like, err) < 0)
        return NULL;
    tide_engine_t *e = engine_like(like, err);
    if (!e)
        return NULL;
    r_state(&r, e);
    if (!r.bad && r.pos != r.n)
        r.bad = 1; /* trailing bytes */
    if (r.bad || !handles_valid(e)) {
        tide_engine_destroy(e);
        tide_errf(err, TIDE_EINVAL, "engine snapshot: truncated or malformed (at byte %zu of %zu)",
                  r.pos, r.n);
        return NULL;
    }
    tide__spread_rebuild(e);
    tide__grow_slots_rebuild(e); /* derived from e->running, not stored */
    tide__queue_keys_rebuild(e); /* derived from e->q and the jobs, not stored */
    tide__job_doms_rebuild(e);   /* derived from the running jobs' GPUs */
    tide__end_index_rekey(e);    /* the keys of e->by_end, from the jobs' exp_end */
    tide__svc_index_rebuild(e);  /* derived from the domains and replicas */
    tide__acct_cnt_rebuild(e);   /* derived from e->cnt */
    tide__lent_rebuild(e);       /* derived from the running jobs */
    e->renew_rescan = 1;         /* the jobs noted for renewal are not stored */
    e->lw_mt = 0;                /* the tail's block bounds: all unknown */
    tide__lease_need_pmax(e);    /* from the need curve */
    return e;
}

/* ---------------------------------------------------------- layout check */

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#define PAD_FN(T, fn)                                                                          \
    static void fn(void *p) { __builtin_clear_padding((T *)p); }
PAD_FN(tide_config_t, pad_cfg)
PAD_FN(tide_service_spec_t, pad_svc_spec)
PAD_FN(node_t, pad_node)
PAD_FN(domain_t, pad_dom)
PAD_FN(tide_engine_t, pad_engine)
PAD_FN(tide_stats_t, pad_stats)
PAD_FN(tide_job_spec_t, pad_job_spec)
PAD_FN(job_t, pad_job)
PAD_FN(replica_t, pad_rep)
PAD_FN(lease_t, pad_lease)
PAD_FN(lc_t, pad_lc)
PAD_FN(samples_t, pad_samples)
PAD_FN(service_t, pad_svc)
PAD_FN(forecast_t, pad_fc)
PAD_FN(fc_sample_t, pad_fcs)
PAD_FN(struct fc_pred, pad_pred)
PAD_FN(struct fc_ens_prop, pad_ens)
PAD_FN(struct fc_ens_cf, pad_ensc)
PAD_FN(struct hpa_rec, pad_hpa)
PAD_FN(oracle_job_t, pad_orc)
PAD_FN(team_t, pad_team)
PAD_FN(cap_tot_t, pad_cap_tot)

typedef struct layout {
    const char *name;
    size_t size;
    void (*pad)(void *);
    const tide_field_t *f[3];
    size_t nf[3];
    int loose;     /* the builtin misses padding in it (see uncovered) */
} layout_t;

#define T2(a, b) {a, b, NULL}, {NF(a), NF(b), 0}, 0
#define T1(a) {a, NULL, NULL}, {NF(a), 0, 0}, 0
#define T2_LOOSE(a, b) {a, b, NULL}, {NF(a), NF(b), 0}, 1

static const layout_t layouts[] = {
    {"tide_config_t", sizeof(tide_config_t), pad_cfg, T2(cfg_f, cfg_skip)},
    {"tide_service_spec_t", sizeof(tide_service_spec_t), pad_svc_spec, T2(svc_spec_f, svc_spec_skip)},
    {"node_t", sizeof(node_t), pad_node, T2(node_shape_f, node_f)},
    {"domain_t", sizeof(domain_t), pad_dom, T2(dom_shape_f, dom_f)},
    {"tide_engine_t", sizeof(tide_engine_t), pad_engine, T2_LOOSE(engine_f, engine_skip)},
    {"tide_stats_t", sizeof(tide_stats_t), pad_stats, T1(stats_f)},
    {"tide_job_spec_t", sizeof(tide_job_spec_t), pad_job_spec, T2(job_spec_f, job_spec_skip)},
    {"job_t", sizeof(job_t), pad_job, T2(job_f, job_skip)},
    {"replica_t", sizeof(replica_t), pad_rep, T2(rep_f, rep_skip)},
    {"lease_t", sizeof(lease_t), pad_lease, T1(lease_f)},
    {"cap_tot_t", sizeof(cap_tot_t), pad_cap_tot, T1(cap_tot_f)},
    {"lc_t", sizeof(lc_t), pad_lc, T1(lc_f)},
    {"samples_t", sizeof(samples_t), pad_samples, T2(samples_f, samples_skip)},
    {"service_t", sizeof(service_t), pad_svc, T2_LOOSE(svc_f, svc_skip)},
    {"forecast_t", sizeof(forecast_t), pad_fc, T2(fc_f, fc_skip)},
    {"fc_sample_t", sizeof(fc_sample_t), pad_fcs, T1(fcs_f)},
    {"struct fc_pred", sizeof(struct fc_pred), pad_pred, T1(pred_f)},
    {"struct fc_ens_prop", sizeof(struct fc_ens_prop), pad_ens, T1(ens_f)},
    {"struct fc_ens_cf", sizeof(struct fc_ens_cf), pad_ensc, T1(ensc_f)},
    {"struct hpa_rec", sizeof(struct hpa_rec), pad_hpa, T1(hpa_f)},
    {"oracle_job_t", sizeof(oracle_job_t), pad_orc, T1(orc_f)},
    {"team_t", sizeof(team_t), pad_team, T2(team_f, team_skip)},
};

/* Does a member of l's tables start at byte at (or is it the end)? */
static int member_at(const layout_t *l, size_t at)
{
    if (at == l->size)
        return 1;
    for (int k = 0; k < 3; k++)
        for (size_t j = 0; j < l->nf[k]; j++)
            if (l->f[k][j].off == at)
                return 1;
    return 0;
}

/* The first byte of l that belongs to no table, or l->size. GCC 12's
 * __builtin_clear_padding leaves padding after a large member set (after smp
 * in tide_engine_t, fc in service_t), so there (loose) a run it left is also taken for
 * padding when it is shorter than 8 bytes and ends where an 8-aligned member
 * starts: a left-out pointer, double or 64-bit member is still found, a
 * left-out int just before one is not. */
static size_t uncovered(const layout_t *l, unsigned char *b)
{
    l->pad(b); /* padding bytes are 0 now, members' bytes 0xff */
    for (int k = 0; k < 3; k++)
        for (size_t j = 0; j < l->nf[k]; j++)
            memset(b + l->f[k][j].off, 0, l->f[k][j].size);
    for (size_t at = 0; at < l->size; at++) {
        if (!b[at])
            continue;
        size_t end = at;
        while (end < l->size && b[end])
            end++;
        if (!l->loose || end - at >= 8 || end % 8 || !member_at(l, end))
            return at;
        at = end;
    }
    return l->size;
}

int tide__snapshot_layout_check(tide_error_t *err)
{
    for (size_t i = 0; i < NF(layouts); i++) {
        const layout_t *l = &layouts[i];
        unsigned char *b = tide_xmalloc(l->size);
        memset(b, 0xff, l->size);
        size_t at = uncovered(l, b);
        free(b);
        if (at < l->size)
            return tide_errf(err, TIDE_ESTATE,
                             "snapshot: byte %zu of %s is in no field table of src/core/snap.c "
                             "(a member added without saying whether snapshots keep it?)",
                             at, l->name);
    }
    return 0;
}
#else
int tide__snapshot_layout_check(tide_error_t *err)
{
    (void)err;
    return 1; /* needs __builtin_clear_padding (GCC 11+) */
}
#endif
