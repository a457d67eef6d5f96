"""The findings table: each kind a judge can name, for which trainer family, with its thresholds
as data.

Like the default panels (`metrics/panels.py`) and the built-in alert rules (`alerts/rules.py`),
findings are keyed by the trainer's metric family, a trait in `trainers/knowledge.py`. The judge
(`findings/judge.py`) reads the thresholds from here, so a threshold is changed in one place and
`docs/findings.md` says the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FindingKind:
    name: str
    # The key written in the `finding` record (`{finding: reward_hacking}` in an alert rule).
    title: str
    family: str
    # The metric family it applies to: general (every trainer), sft, grpo, preference, ppo (see
    # `trainers.knowledge.metric_family`).
    severity: str
    fix: str
    thresholds: dict[str, Any] = field(default_factory=dict)
    also: tuple[str, ...] = ()
    # Other families whose runs log the same quantity and get this kind too (PPO's policy
    # entropy and KL to the reference are GRPO's, under other names).


GENERAL = "general"
"""The family of the kinds every trainer gets."""

KINDS: dict[str, FindingKind] = {k.name: k for k in (
    # --- every trainer
    FindingKind(
        "nothing_trains", "Nothing trains", GENERAL, "error",
        "the model is not learning: check learning_rate, that the parameters require grad (a "
        "frozen model, a LoRA with no target_modules), that some labels are not -100, and for NaN "
        "lower the learning rate or train in bf16/fp32 instead of fp16",
        {
            "min_points": 5,
            # The judge waits for this many logged points of loss (or grad_norm).
            "zero_share": 0.9,
            # loss (or grad_norm) exactly 0 at this share of the points or more ...
            "nan_tail": 3,
            # ... or NaN/inf at the last this many logged points (it diverged and stayed) ...
            "constant_points": 10,
            # ... or the very same value at every point, this many points or more.
        }),
    FindingKind(
        "nonfinite_values", "NaN or inf in the metrics", GENERAL, "warning",
        "some steps logged NaN or inf (a gradient, a loss, log-probs): their update was skipped "
        "(fp16 loss scaling) or the numbers overflowed. Train in bf16 if the hardware has it, "
        "lower the learning rate, keep max_grad_norm on, and look at the batches of those steps",
        {
            "calibration": 10,
            # NaN/inf at the first this many steps is fp16's loss scaler calibrating: not counted
            "count": 2,
            # NaN/inf at this many logged steps or more (any metric but timings; a run that stays
            # NaN to the end is nothing_trains) ...
            "share": 0.02,
            # ... and at this share of the logged steps or more.
        }),
    FindingKind(
        "loss_rises_in_warmup", "Loss rises during warm-up", GENERAL, "warning",
        "the train loss got worse while the learning rate warmed up: the peak learning rate is too "
        "high for this model and data. Lower learning_rate (often 3–10×) or warm up longer",
        {
            "rise": 0.3,
            # the train loss around the learning rate's peak above its lowest point before the
            # peak by this share or more
            "cold": 0.5,
            # the run warms up: its first learning rate below this share of the peak
            "around": 3,
            # the loss "around the peak": the median of this many logged points from the peak on
            # (judged once the learning rate decays) ...
            "sigma": 2.0,
            # ... above the lowest point by more than this many robust σ of the step-to-step
            # changes before the peak (per-step noise is no rise)
        }),
    FindingKind(
        "lr_zero", "Learning rate 0", GENERAL, "error",
        "the optimizer steps with a learning rate of 0: check learning_rate and the scheduler "
        "(warmup over the whole run, a schedule that already ended at a resume)",
        {
            "share": 0.3,
            # learning_rate is exactly 0 at this share of the logged points or more (the first
            # points of a warmup and the very last of a linear decay are 0 in a healthy run) ...
            "lead_steps": 20,
            # ... leading zeros that end by this step (or 10% of max_steps) and give way to a
            # learning rate are the warm-up's start (or fp16's skipped first steps), not counted.
            "min_points": 4,
        }),
    FindingKind(
        "warmup_longer_than_run", "Warm-up longer than the run", GENERAL, "warning",
        "the learning rate was still warming up when the run ended, so it never trained at the "
        "rate you set: lower warmup_steps / warmup_ratio (warmup_ratio is a share of max_steps), "
        "or train longer",
        {
            "min_points": 5,
            "rising_share": 0.8,
            # learning_rate rose at this share of its changes or more ...
            "near_end": 0.9,
            # ... and the run reached this share of max_steps (a live run mid-warm-up is fine).
        }),
    FindingKind(
        "schedule_restart", "The schedule restarted", GENERAL, "warning",
        "the learning rate jumped back up mid-run: a resume that started a new schedule (a new "
        "Trainer, or resume_from_checkpoint not given), so the warm-up and decay ran again. "
        "Resume with resume_from_checkpoint=<the checkpoint>; if you chose cosine_with_restarts "
        "this is expected",
        {
            "rise": 0.2,
            # after its first peak (the end of the warm-up) learning_rate rose back above the
            # lowest it had decayed to by this share of the peak: a decay never rises.
        }),
    FindingKind(
        "overfitting", "Overfitting", GENERAL, "warning",
        "the eval loss is past its best: keep the best checkpoint (load_best_model_at_end: true, "
        "metric_for_best_model: eval_loss, save_steps a multiple of eval_steps), stop early "
        "(EarlyStoppingCallback), train fewer epochs, or add data",
        {
            "min_evals": 4,
            # eval points of an eval loss the judge waits for
            "rise": 0.05,
            # the last eval loss above the best one by this share of the best or more ...
            "rise_sigma": 2.0,
            # ... and by this many robust standard deviations of the eval points' step-to-step
            # changes (an eval loss that wanders is no rise)
            "after": 2,
            # eval points after the best one, at least
            "train_flat": 0.02,
            # the train loss after the best eval did not rise by more than this share, its last
            # points against its first ones (both rising is instability, not overfitting)
            "kept": 0.75,
            # an eval metric of the same eval set "still improves" when it is better than at the
            # eval loss's best and kept this share of its best gain since (then: the info kind)
        }),
    FindingKind(
        "eval_metric_improves_while_loss_rises", "Eval metric still improves", GENERAL, "info",
        "the eval loss rose past its best but the eval metric still improves, which is common "
        "(the model gets more confident on the answers it gets wrong): choose the checkpoint by "
        "that metric (metric_for_best_model, greater_is_better) rather than by eval loss",
        {}),
    FindingKind(
        "memorisation_no_eval", "Memorised, with no eval to tell", GENERAL, "warning",
        "the train loss is near 0 after several epochs: the model has learnt the training set by "
        "heart, and with no eval set nothing shows it generalises. Add an eval set "
        "(eval_strategy, eval_steps), train fewer epochs, or add data",
        {
            "epochs": 3.0,
            # at least this many passes over the data ...
            "below": 0.05,
            # ... and the train loss's late median (the last 20% of points, 5 to 500) below this
            "edge": 0.2,
        }),
    FindingKind(
        "best_metric_inverted", "The best checkpoint is the worst", GENERAL, "warning",
        "the Trainer's best-model tracking counts the wrong direction: set greater_is_better to "
        "false for a metric where lower is better (wer, cer, loss) and true for one where higher is "
        "(accuracy, f1), or load_best_model_at_end will load the worst checkpoint",
        {}),
    FindingKind(
        "train_eval_gap", "Train–eval gap widens", GENERAL, "info",
        "the model fits the training data ever better than the eval data: watch for overfitting "
        "(load_best_model_at_end, early stopping), regularize (weight_decay, dropout, LoRA "
        "instead of a full fine-tune) or add data",
        {
            "min_evals": 4,
            "widen": 0.25,
            # the gap (eval − train loss) grew by this share of the first eval loss or more
            "plateau": 0.02,
            # while the eval loss improved by less than this share over the last half of the evals
        }),
    FindingKind(
        "loss_spike", "Loss spikes", GENERAL, "warning",
        "the loss jumped at these steps: look at the batches there (a bad row, a very long one), "
        "lower the learning rate, or clip gradients harder (max_grad_norm)",
        {
            "min_points": 50,
            # judged from 50 logged points (a baseline of a few blocks)
            "block": 16,
            # the baseline: the median of every 16 logged points in a row
            "sigma": 8.0,
            # a spike is this many robust standard deviations (1.4826 × MAD of the residuals)
            # above the baseline ...
            "ratio": 1.5,
            # ... and this many times the baseline (for a series that is positive)
            "skip": 0.05,
            # the first share of the points is warm-up, not judged
            "max_share": 0.05,
            # spikes are rare: more than this share of the points that high is a second regime
        }),
    FindingKind(
        "grad_spike", "Gradient-norm spikes", GENERAL, "warning",
        "the gradient norm jumped at these steps: lower the learning rate, keep max_grad_norm "
        "(clipping) on, and look at the batches of those steps",
        {"min_points": 30, "block": 16, "sigma": 10.0, "ratio": 10.0, "skip": 0.05, "max_share": 0.05,
         # 30 points, not the loss's 50: ×10 the run's median grad_norm too is a bar the healthy
         # runs of 30-49 points do not reach (19 files: ×8.7 at most, ×4.6 on the zoo's); the
         # zoo's rloo-lr-too-high's 1,640 at step 39 of 40 is ×46
         "typical": True,
         # the level a spike is measured against is at least the run's median grad_norm (its
         # typical level), not only the level around it: a quiet stretch is no baseline
         "loss_after": 3,
         # a spike is a warning when the loss rose after it (above its level before, beyond its
         # noise, at one of this many logged points after the spike's); with no effect on the loss it is info
         }),
        # A gradient norm of 5× its level for one step is common in healthy runs (clipped at
        # max_grad_norm, it does no harm): a spike is 10× its level.
    FindingKind(
        "reward_model_at_chance", "Reward model at chance", GENERAL, "warning",
        "the reward model cannot tell the chosen answer from the rejected one: check the labels "
        "(chosen and rejected swapped for part of the data, a shuffle that broke the pairs), that "
        "the two answers differ after truncation (max_length), then the learning rate",
        {
            "min_points": 30,
            # judged from this many logged points of the reward trainer's `accuracy` (it logs
            # `margin` beside it: no other trainer logs both)
            "edge": 0.3,
            # the late level: the median of the last share of the points
            "chance": 0.6,
            # at or below this, a pair is a coin toss (0.5) give or take a batch's noise
            "min_evals": 5,
            # with this many evals of eval_accuracy or more, the held-out pairs are judged (the
            # training pairs can be learnt by heart, labels right or not)
        }),
    FindingKind(
        "loss_level_shift", "Loss moved to a new level", GENERAL, "warning",
        "the train loss jumped to a new, higher level and stayed there: the run diverged and "
        "recovered (or did not), or the data changed under it. Look at what changed at the first "
        "step (a new data shard, a resume, the learning rate), lower the learning rate, and keep "
        "the checkpoint from before the jump",
        {
            "block": 16,
            # the level: the median of every this many logged points in a row (fewer in a short run)
            "times": 2.0,
            # a block's level at this many times the level before the stretch or more ...
            "before": 8,
            # ... "the level before": the median of up to this many blocks before the stretch,
            "recent": 3,
            # or of this many blocks just before it when that is lower (a loss still falling
            # from its start: the median of 8 blocks lags it)
            "min_blocks": 3,
            # ... for this many blocks in a row or more ...
            "min_share": 0.05,
            # ... and this share of the run's logged points or more (shorter is a spike's)
            "skip": 0.05,
            # the first share of the points (and the first block) is the warm-up, not judged
            "min_points": 64,
        }),
    FindingKind(
        "kl_spike", "KL spikes", GENERAL, "warning",
        "the policy moved far from the reference at these steps: lower the learning rate, raise "
        "beta (the KL coefficient), and read the completions of those steps",
        {"min_points": 50, "block": 16, "sigma": 10.0, "ratio": 5.0, "skip": 0.05, "floor": 0.05, "max_share": 0.05}),
    # --- GRPO and its kin
    FindingKind(
        "reward_hacking", "Reward hacking", "grpo", "warning",
        "read the top-rewarded completions: if they game the reward (too short, too long, one "
        "function only), fix that reward function or add one that pays for what you want",
        {
            "min_points": 10,
            # The judge waits for this many logged points: the early and late windows never overlap.
            "edge": 0.2,
            # The early and late windows: this share of the logged points each (at least 5, at most
            # 500).
            "reward_rise": 0.5,
            # The late reward above the early one by this many early reward standard deviations
            # (reward_std, else the spread of the early reward), and by 5% of |early| at least ...
            "reward_sigma": 2.0,
            # ... and by this many robust standard deviations (1.4826 × MAD) of the early reward
            # points: a noisy reward that does not move is no rise.
            "length_collapse": 0.4,
            # completions/mean_length fell by this share or more.
            "length_balloon": 1.0,
            # completions/mean_length rose by this share (1.0 = doubled) or more.
            "entropy_fall": 0.6,
            # entropy fell by this share or more.
            "one_function_share": 0.9,
            # With two reward functions or more: one of them carries this share of the rise.
            "evidence_rows": 6,
        }),
    FindingKind(
        "reward_flat", "The reward does not improve", "grpo", "warning",
        "the policy moves (the KL to the reference grows) but the reward does not rise: what it "
        "learns is not what the rewards pay for. Read the completions of the last steps and run "
        "the reward functions on a few of them by hand (do they score what the prompts ask?), "
        "check that the task is within the model's reach (a few prompts it can solve), then the "
        "learning rate",
        {
            "min_points": 60,
            # judged over this many logged points or more (a short run's reward is still noise)
            "blocks": 10,
            # the reward's level: the means of the run cut in this many stretches (5 points each at
            # least) ...
            "rise_sigma": 2.0,
            # ... it rose when the last stretch's mean is above the first's by more than this many
            # robust σ of the stretches' step-to-step changes (the reward's own wander) ...
            "rise_share": 0.05,
            # ... and by this share of the reward's range over the run, at least
            "kl_times": 2.0,
            # the policy moves: kl late above early by this factor (or entropy by `entropy_move`)
            "entropy_move": 0.2,
        }),
    FindingKind(
        "wasted_groups", "Wasted groups", "grpo", "warning",
        "most groups got one reward for all their completions and teach nothing: drop those "
        "prompts (cockpit findings RUN --export-prompts FILE), raise num_generations or the "
        "sampling temperature, or make the reward finer-grained",
        {
            "above": 0.5,
            # frac_reward_zero_std above this ...
            "for": 5,
            # ... for this many logged steps in a row.
            "evidence_prompts": 50,
        }),
    FindingKind(
        "clipping", "Completions clipped", "grpo", "warning",
        "completions hit max_completion_length before they ended: raise max_completion_length, "
        "or reward shorter answers",
        {"above": 0.5, "for": 5, "evidence_rows": 6}),
    FindingKind(
        "reward_never_pays", "A reward function never pays", "grpo", "warning",
        "a reward function gave 0 to every completion: it teaches nothing and its weight is "
        "wasted. Check it on a few completions (its parsing, the answer format it expects, the "
        "columns it reads), or drop it from reward_funcs",
        {"min_points": 20}),
        # a function is judged on 20 logged steps or more: one that has not paid yet is no verdict
    FindingKind(
        "reward_constant", "A reward function always pays the same", "grpo", "warning",
        "a reward function gave the same reward to every completion at every step: with the same "
        "reward in a group it adds no advantage and teaches nothing. Check it on a few "
        "completions, or drop it from reward_funcs",
        {"min_points": 20}),
    FindingKind(
        "kl_nonzero_at_start", "KL not 0 at the start", "grpo", "warning",
        "the KL to the reference is far from 0 before the policy could move: the reference model is "
        "not the model training starts from (a LoRA policy's reference is the base model with the "
        "adapter off; a stage-2 run's reference is the stage-1 model's base). The KL term then pulls "
        "toward the wrong model: merge the earlier adapter first, or set beta 0",
        {
            "above": 0.1,
            # the median of the first 3 logged kl points above this ...
            "within": 20,
            # ... the first of them logged at this step or earlier
        }),
    FindingKind(
        "length_without_reward", "Length grows without reward", "grpo", "warning",
        "completions get longer while the reward does not rise: the policy spends tokens for "
        "nothing (rambling, repetition). Read the longest completions; lower "
        "max_completion_length, add a length penalty, or check that the reward can pay",
        {
            "min_points": 10,
            "edge": 0.2,
            "grow": 0.5,
            # completion length late above early by this share (0.5 = half again) or more ...
            "reward_sigma": 2.0,
            # ... while the reward rose less than this many robust standard deviations of its
            # early points and less than `reward_share` of |early|.
            "reward_share": 0.1,
            "evidence_rows": 6,
        }),
    FindingKind(
        "entropy_collapse", "Entropy collapsed", "grpo", "warning",
        "the policy became nearly deterministic: its completions of a prompt stop differing, so "
        "there is nothing left to compare and learn from. Lower the learning rate, raise beta "
        "(kl_coef for PPO) or the sampling temperature",
        {
            "min_points": 10,
            "edge": 0.2,
            "fall": 0.7,
            # entropy late below early by this share or more ...
            "below": 0.3,
            # ... and to a level below this (nats per token: PPO's policy/entropy_avg, not its
            # objective/entropy, a sum over each completion's tokens) ...
            "fall_alone": 0.9,
            # ... or by this share or more, whatever the level (a large vocabulary's 6.6 → 0.4)
            "start": 3,
            # "early" is the higher of the early window's median and that of the first this many
            # points (an entropy that collapsed inside the early window)
        }, also=("ppo",)),
    FindingKind(
        "kl_blowup", "KL blow-up", "grpo", "warning",
        "the policy drifts ever further from the reference: lower the learning rate, raise beta, "
        "and read the late completions for degenerate text",
        {
            "min_points": 10,
            "edge": 0.2,
            "times": 10.0,
            # KL late above early by this factor ...
            "above": 1.0,
            # ... and above this level (late median, nats per token) ...
            "above_sum": 10.0,
            # ... or this one for objective/kl (PPO; RLOO before TRL 0.17), a sum over each
            # completion's tokens (kl.sum(1)): TRL's docs keep it "between 0 and 10"
            "start": 3,
            # a KL that blew up inside the early window is judged against the median of its first
            # this many points (the policy had barely moved): above that ×times and above the
            # level at a point of the early window, and its median from there to the end too
            "stretch_share": 0.1,
            "stretch_min": 5,
            "stretch_times": 2.0,
            # or a blow-up that came back (the policy collapsed, the penalty pulled it in): over
            # this share of the run's points in a row, and this many at least, a median at this
            # many times the level or more (and ×times the first points): far above the level,
            # not a creep to it (grpo-clipped-midrun's 1.03-1.17 a token at the level of 1)
        }, also=("ppo",)),
    FindingKind(
        "clipping_drags_reward", "Clipping drags a reward down", "grpo", "warning",
        "more completions hit max_completion_length and a reward that needs a finished answer "
        "(format, correctness) falls with it: raise max_completion_length, or reward shorter "
        "answers",
        {
            "min_points": 10,
            "edge": 0.2,
            "early_below": 0.5,
            # completions/clipped_ratio began low (under this): clipped from the start is clipping's
            "clip_rise": 0.2,
            # completions/clipped_ratio late above early by this much (absolute) ...
            "fall": 0.2,
            # ... while a reward function fell by this share of its early level (or of its range)
            "evidence_rows": 6,
        }),
    # --- DPO and its kin
    FindingKind(
        "chosen_logps_falling", "Chosen log-probs falling", "preference", "warning",
        "the chosen answers lose likelihood (the margin grows by pushing answers down, not the "
        "chosen ones up): lower the learning rate or beta, or add an SFT term on chosen "
        "(rpo_alpha in DPOConfig, or CPO/ORPO)",
        {
            "min_points": 20,
            "edge": 0.2,
            "fall": 0.05,
            # logps/chosen fell by this share of its |early| level ...
            "fall_sigma": 2.0,
            # ... and by this many robust standard deviations (1.4826 × MAD) of its early points.
            "start_over": 5,
            # the fall's start read on the median of 5 points around each: the per-batch means of
            # DPO and KTO repeat their batches' spread, and one batch back at the early level
            # (kto-lr-too-high's -8.1 at step 39 of 40) is not where the fall began
        }),
    FindingKind(
        "dpo_saturated", "Preference loss saturated", "preference", "warning",
        "the model already separates every pair: the loss is near 0 and the margins keep growing "
        "by pushing the rejected answers down, which teaches little and drifts from the "
        "reference. Stop earlier (fewer steps or epochs), lower the learning rate, raise beta, or "
        "use harder pairs",
        {
            "min_points": 4,
            # few: each point is unambiguous (a loss of 0 with every pair right, or a margin of 20),
            # and a short run that logs every 10 steps has only a handful (it must still hold at
            # the last 3 points, from the first half on)
            "loss": 0.02,
            # the loss's median from the saturation step on is below this ...
            "accuracy": 0.98,
            # ... rewards/accuracies' median from then on is at least this ...
            "margin": 20.0,
            # ... or rewards/margins' median from then on is above this (either pins it)
            "early": 0.5,
            # it saturated in the first half of the run (the rest taught little)
            "hold": 0.9,
            # and stayed so at this share of the points after
        }),
    # --- PPO (the PPO article's debugging recipes)
    FindingKind(
        "ppo_ratio", "Policy ratio far from 1", "ppo", "warning",
        "val/ratio (new to old policy probabilities) should hover near 1: each update moves the "
        "policy too far from the one that sampled the batch. Lower the learning rate, or take "
        "fewer optimizer steps on each batch (num_ppo_epochs, num_mini_batches)",
        {
            "far": 0.5,
            "for": 3,
            # val/ratio more than `far` from 1 for `for` logged updates in a row ...
            "high": 2.0,
            "low": 0.1,
            "for_extreme": 2,
            # ... or for `for_extreme` in a row when one of them is at the PPO article's "too far"
            # (2.0 and above, 0.1 and below): one such update alone is not named
        }),
    FindingKind(
        "ppo_update_too_large", "PPO updates too large", "ppo", "warning",
        "an update moved the policy far beyond PPO's clip range (many tokens clipped): the "
        "learning rate is too high for this model. Lower it, or take fewer optimizer steps on "
        "each batch (num_ppo_epochs, num_mini_batches), and keep max_grad_norm on",
        {
            "above": 0.1,
            # policy/approxkl_avg (the KL between the policy that sampled a batch and the one
            # its updates made) above this: the clip range 0.2 bounds a ratio of 1.2, a KL of
            # about 0.02 per token, so 0.1 is an update far beyond it (ppo-healthy: 4e-4 at most)
            "count": 2,
            # at this many logged updates or more (one is an outlier)
        }),
    FindingKind(
        "rlhf_reward_falling", "RLHF reward falling", "ppo", "warning",
        "objective/rlhf_reward should rise: check the reward model on a few completions, lower "
        "the learning rate, or raise kl_coef if the KL grows",
        {
            "min_points": 8,
            "edge": 0.2,
            "fall_sigma": 2.0,
            # late median below early median by this many robust σ of the early points ...
            "start": 5,
            # ... or, a fall inside the early window (its median already below the first points'),
            # the early and the late medians both below the median of the first this many points
            # by `fall_sigma` robust σ of those points
            "stretch_share": 0.1,
            "stretch_min": 5,
            "stretch_sigma": 10.0,
            # or a fall that came back (the penalty of a KL that blew up, until the policy
            # collapsed): over this share of the run's points in a row, and this many at least, a
            # median below the first points' by this many robust σ of them (ppo-kl-penalty-20x:
            # 110 σ, ppo-many-updates-a-batch 33; the healthy PPO and online DPO runs 0.2 and 1.0)
        }),
    FindingKind(
        "value_loss_blowup", "Value loss blow-up", "ppo", "error",
        "the value head cannot follow the returns it must predict: bring their scale down "
        "(whiten_rewards, the reward model's scores, kl_coef when the KL grows: the penalty is "
        "part of every return) or lower the learning rate",
        {
            "min_points": 6,
            "edge": 0.2,
            "times": 10.0,
            # loss/value_avg above this many times its early level ...
            "for": 3,
            # ... for this many logged steps in a row: one update whose completion ran to the cap
            # (×13 for one step in the zoo's healthy PPO run) is not a blow-up
        }),
)}


WHOLE_RUN = frozenset({"model_unchanged", "one_layer_change", "weight_change"})
"""Kinds said once per checkpoint that are one condition of the run: shown once, over every
checkpoint that said it (the latest one's words and evidence)."""


def kinds_for(family: str | None) -> list[FindingKind]:
    """The kinds that apply to a trainer family (the general ones first), in table order."""
    return [k for k in KINDS.values() if k.family in (GENERAL, family) or family in k.also]
