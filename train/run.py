"""One training run, top to bottom: config → output folder → data → model → trainer → model folder + report.

Everything heavy is sentence-transformers' `SentenceTransformerTrainer` (transformers' Trainer): the loop,
progress bar, seed, periodic evaluation, keeping the best checkpoint, resuming, DDP under torchrun.
What goes in is assembled by `lwap.train.trainer.build_trainer`; this module runs it and writes what
comes out (see `lwap.train.outputs` for the layout).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import sentence_transformers
import torch
import torch.distributed as dist
import transformers
from transformers import TrainerState

import lwap
from lwap.backbones import check_backbone
from lwap.checks.files import read_json_object, write_json_atomically, write_text_atomically
from lwap.errors import LwapError, Terminated
from lwap.library_output import datasets_bars_off, library_warnings_held
from lwap.model import inference_max_seq_length, load_model
from lwap.paths import expand_path
from lwap.train import outputs
from lwap.train.callbacks import process_group_exists
from lwap.train.config import TrainConfig, dump_config
from lwap.train.data import EMPTY_TEXT, empty_texts
from lwap.train.dev_sets import summary_dev
from lwap.train.divergence import TrainingDivergedError, divergence_message
from lwap.train.elastic_config import check_backbone_depths
from lwap.train.general_sts import measure_general_sts, result_line, unavailable_note
from lwap.train.head_training import head_learning_rate
from lwap.train.model_card import describe_run, write_card
from lwap.train.precision import remove_training_autocast
from lwap.train.resume import (
    check_checkpoint_origin,
    check_resumed_config,
    record_resumed_config,
    set_aside_newer,
)
from lwap.train.trainer import build_trainer, initial_model, training_inputs
from lwap.train.training_curves import dev_geometry, dev_scores, plot_curves


def output_path(config: TrainConfig) -> Path:
    return expand_path(config.output.dir)


def train(
    config: TrainConfig,
    *,
    config_path: str | None = None,
    resume: bool | str | None = None,
    overwrite: bool | None = None,
    callbacks: list[Any] | tuple[Any, ...] = (),
) -> dict[str, Any]:
    """Train as `config` says; return the summary (also written to OUT/train_summary.json).

    `resume`: True = latest complete checkpoint in OUT/checkpoints, or a checkpoint folder.
    `overwrite`: replace a finished run in OUT (default: config.output.overwrite).
    Ctrl-C, SIGTERM and SIGHUP save a checkpoint and raise KeyboardInterrupt (`Terminated` for the two
    last). A resume changes no record and deletes no checkpoint (`lwap.train.resume`). A run holds OUT's lock
    (`lwap.checks.locking`): a second run, or `--resume`, on a folder a live run uses raises LockedError.
    A diverging run stops (TrainingDivergedError), a refused write raises OutputWriteError (one line
    each; `lwap.train.divergence`, `lwap.train.outputs.checkpoint_write_error`).
    """
    out = output_path(config)
    is_main = int(os.environ.get("RANK", "0")) == 0  # torchrun's global rank; only it writes OUT
    with (
        outputs.run_lock(out) if is_main else contextlib.nullcontext(),
        datasets_bars_off(not config.training.progress_bar),  # transformers' bars: `disable_tqdm`
    ):
        return _train(config, out, config_path, resume, overwrite, callbacks)


def _train(
    config: TrainConfig,
    out: Path,
    config_path: str | None,
    resume: bool | str | None,
    overwrite: bool | None,
    callbacks: list[Any] | tuple[Any, ...],
) -> dict[str, Any]:
    wall_start = time.perf_counter()
    if overwrite is None:  # an explicit --resume wins over the config's standing `overwrite: true`
        overwrite = config.output.overwrite and not resume
    resume_from = outputs.check_output_dir(
        out, overwrite=overwrite, resume=resume
    )  # read-only, every process
    changes: dict[str, list[Any]] = {}
    if resume_from is not None:  # this run's own checkpoint, and nothing changed the checkpoint can't take
        check_checkpoint_origin(out, resume_from)
        changes = check_resumed_config(out, config)

    # the inputs before the output folder: a bad backbone, data file or dev set must not clear or start a
    # run there (the training arguments, made with them, start the process group under torchrun); what the
    # libraries warn meanwhile (the backbone's load report) is said once they are good, a refusal alone
    with library_warnings_held():
        check_backbone(config.model.backbone, trust_remote_code=config.model.trust_remote_code)
        check_backbone_depths(config, config_path or "config")  # objective.depths, matryoshka_dims
        inputs = training_inputs(config, out, resuming=resume_from is not None)
    args, dataset = inputs.args, inputs.dataset
    is_main = args.process_index == 0
    with args.main_process_first(desc="output folder"):
        if is_main:
            if resume_from is not None:
                set_aside_newer(out, resume_from)  # no checkpoint is deleted by a resume
            outputs.prepare_output_dir(out, overwrite=overwrite)
            if resume_from is None:
                write_text_atomically(out / outputs.CONFIG_YAML, dump_config(config))
            else:  # config.yaml stays as the run began; what changed is recorded beside it
                record_resumed_config(out, config, changes, outputs.checkpoint_step(resume_from) or 0)

    built = build_trainer(config, out, inputs=inputs, callbacks=callbacks)
    trainer, stop = built.trainer, built.stop
    _announce(config, args, dataset, resume_from, built.dev)
    try:
        if resume_from is not None and _training_done(resume_from, config):
            _load_finished(trainer, resume_from, config)  # only the model is missing (its write failed)
        else:
            trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    except LwapError:
        raise
    except Exception as error:  # a checkpoint the file system refused: one line, not a traceback
        out_of_memory = out_of_memory_error(error, config)
        if out_of_memory is not None:
            raise out_of_memory from None
        refused = outputs.checkpoint_write_error(error, out) if is_main else None
        if refused is None:
            raise
        raise refused from None
    finally:
        built.tf32.restore()  # TF32 as it was before training, also after a failure
    remove_training_autocast(trainer.model)  # what runs in this process from here on: the model's dtype

    if built.divergence.diverged is not None:
        raise TrainingDivergedError(divergence_message(built.divergence.diverged, config, out, config_path))
    if stop.stopped_at_step is not None:
        if is_main:
            print(
                f"lwap train: stopped at step {stop.stopped_at_step}; checkpoint saved in "
                f"{out / outputs.CHECKPOINTS_DIR}/checkpoint-{stop.stopped_at_step}. Continue with: "
                f"lwap train {config_path or 'CONFIG'} --resume",
                flush=True,
            )
        if stop.signum in (signal.SIGINT, None):
            raise KeyboardInterrupt
        raise Terminated(stop.signum)  # SIGTERM, SIGHUP: the CLI exits 128 + its number, as a shell says

    summary: dict[str, Any] = {}
    if is_main:
        trainer.model.max_seq_length = inference_max_seq_length(trainer.model)  # undo the training truncation
        if config.eval.keep_best and trainer.state.best_global_step == 0:  # never checkpointed: rebuild it
            trainer.model.load_state_dict(initial_model(config).state_dict())
        describe_run(trainer, config)  # card: backbone, pooling, objective, the kept model's score
        model_dir = outputs.save_model_atomically(trainer.model, out)
        summary = _summary(
            config, config_path, args, trainer, built.timing, dataset, resume_from, model_dir, built.dev
        )
        summary["resume_changes"] = changes or None  # key: [config.yaml's, this resume's] (lwap.train.resume)
        # kept by the user's dev set: STS-B dev before and after, what specialising cost (after the save)
        summary["general_sts"] = measure_general_sts(config, trainer.model, built.dev)
        summary["wall_time_seconds"] = round(time.perf_counter() - wall_start, 1)
        write_json_atomically(summary, out / outputs.SUMMARY_JSON)
        write_card(out)  # the card users read: loading with trust_remote_code, data, losses (lwap card)
        plot_curves(
            trainer.state.log_history,
            out / outputs.CURVES_PNG,
            f"{config.model.pooling} · {config.objective.name} · {Path(config.model.backbone).name}",
            kept_step=summary["final_model_step"] if built.dev is not None else None,
            **({"dev_key": built.dev.key, "dev_name": built.dev.short_name} if built.dev else {}),
        )
        _print_result(summary, out)
    if process_group_exists():  # even of one process, so that a one-GPU torchrun runs it too
        dist.barrier()  # the other processes wait until the model folder is complete
    return summary


class TrainingOutOfMemoryError(LwapError):
    """The training device ran out of memory; the message says which settings need less."""


def out_of_memory_error(error: BaseException, config: TrainConfig) -> TrainingOutOfMemoryError | None:
    """One line for torch's out-of-memory error (CUDA's, or another accelerator's), None for others."""
    if not isinstance(error, torch.OutOfMemoryError):
        return None
    t = config.training
    first = str(error).strip().splitlines()[0] if str(error).strip() else "out of memory"
    smaller = t.per_device_batch_size // 2 or 1
    mini = (
        f"a smaller training.mini_batch_size (now {t.mini_batch_size})"
        if t.mini_batch_size
        else f"training.mini_batch_size: {smaller} (GradCache: the same loss and gradients, less memory)"
    )
    return TrainingOutOfMemoryError(
        f"out of device memory while training ({first[:160]}); try {mini}, a smaller "
        f"training.per_device_batch_size (now {t.per_device_batch_size}; changes the negatives), "
        f"model.max_seq_length (now {config.model.max_seq_length}) or eval.batch_size "
        f"(now {config.eval.batch_size}); --resume continues from the last checkpoint, if one was saved"
    )


def _training_done(checkpoint: Path, config: TrainConfig) -> bool:
    """Whether `checkpoint` is the last step of the run `config` asks for. transformers would train one
    step more from it; a run whose model could not be written (a full disk) resumes this way."""
    state = read_json_object(checkpoint / "trainer_state.json", finite=False)  # checked by --resume
    target = config.training.max_steps if config.training.max_steps > 0 else state.get("max_steps", 0)
    return int(state.get("global_step", 0)) >= int(target or 0) > 0


def _load_finished(trainer: Any, checkpoint: Path, config: TrainConfig) -> None:
    """The trainer's state and kept weights as training would have left them at `checkpoint`'s step."""
    trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))
    best = trainer.state.best_model_checkpoint
    kept = Path(best) if config.eval.keep_best and best and Path(best).is_dir() else checkpoint
    trusted = config.model.trust_remote_code
    trainer.model.load_state_dict(load_model(kept, device="cpu", trust_remote_code=trusted).state_dict())


def _announce(config: TrainConfig, args: Any, dataset: Any, resume_from: Path | None, dev: Any) -> None:
    if args.process_index != 0:
        return
    for note in dev.notes if dev is not None else []:  # as `lwap eval` says them: before any score
        print(f"lwap train: eval.dev {dev.source}: {note}", file=sys.stderr, flush=True)
    global_batch = config.training.per_device_batch_size * args.world_size
    processes = f" in {args.world_size} processes" if args.world_size > 1 else ""
    resumed = f"; resuming from {resume_from}" if resume_from else ""
    t = config.training
    head_lr = head_learning_rate(t)
    head = f"; head lr {head_lr:g}" if head_lr is not None else ""
    head += f", backbone frozen for {t.head_warmup_steps} steps" if t.head_warmup_steps else ""
    m = config.model
    lwap = f" (start: {m.lwap_start}, queries: {m.lwap_queries}, output: {m.lwap_output})"
    start = lwap if m.pooling == "lwap" else ""
    print(
        f"lwap train: {_objective(config)}, {config.model.pooling} pooling{start} on "
        f"{config.model.backbone}; {len(dataset):,} training examples, global batch {global_batch}"
        f"{processes}, {config.training.precision}, lr {t.learning_rate:g}{head}{resumed}",
        flush=True,
    )
    empty = empty_texts(dataset)
    if empty:
        print(
            f"lwap train: {empty:,} empty texts in the training data, each trained as {EMPTY_TEXT!r}",
            flush=True,
        )


def _objective(config: TrainConfig) -> str:
    """The objective as the run's first line names it: scored pairs with their loss."""
    o = config.objective
    return f"{o.name} ({o.scored_loss})" if o.name == "scored_pairs" else o.name


def _sentences_per_example(config: TrainConfig) -> int:
    """Input texts read per training example: 1 unsupervised (encoded twice), a scored pair 2, supervised
    2 + the number of hard negatives."""
    if config.objective.name == "unsup_simcse":
        return 1
    if config.objective.name == "scored_pairs":
        return 2
    return 2 + len(config.data.negative_columns())


def _summary(
    config: TrainConfig,
    config_path: str | None,
    args: Any,
    trainer: Any,
    timing: Any,
    dataset: Any,
    resume_from: Path | None,
    model_dir: Path,
    dev: Any = None,
) -> dict[str, Any]:
    """train_summary.json. The dev score under general names (`dev_set`, `dev_metric`, `best_dev_score`,
    ...); with STS-B dev also under the names runs before `eval.dev` used (`best_dev_spearman`, ...), which
    `lwap compare` and the benchmarks read."""
    state = trainer.state
    scores = dev_scores(state.log_history, dev.key) if dev is not None else []
    before = next((s for step, s in scores if step == 0), None)
    best_step, best = max(scores, key=lambda item: item[1]) if scores else (None, None)
    if config.eval.keep_best and state.best_global_step is not None:  # step 0 too (its weights rebuilt)
        best_step, best = int(state.best_global_step), float(state.best_metric)
    final_step = best_step if config.eval.keep_best else state.global_step
    final = next((s for step, s in scores if step == final_step), None)
    # a dev set that points nowhere (nothing it judges can be found) scores the same at every evaluation
    moved = any(score != scores[0][1] for _, score in scores) if len(scores) > 1 else None
    steps_here = timing.end_step - timing.start_step
    examples = steps_here * args.per_device_train_batch_size * args.world_size
    train_seconds = max(timing.loop_seconds - timing.eval_seconds, 1e-9)
    examples_per_second = examples / train_seconds if steps_here else None
    return {
        "config_file": config_path,
        "model_dir": str(model_dir),
        "steps": state.global_step,
        "max_steps": state.max_steps,
        "epochs": round(float(state.epoch or 0.0), 4),
        "train_examples": len(dataset),
        "global_batch_size": args.per_device_train_batch_size * args.world_size,
        "processes": args.world_size,
        "precision": config.training.precision,
        "learning_rate": config.training.learning_rate,
        "head_learning_rate": head_learning_rate(config.training),
        "head_warmup_steps": config.training.head_warmup_steps,
        "resumed_from": str(resume_from) if resume_from else None,
        **(dev.summary() if dev is not None else dict.fromkeys(("dev_set", "dev_metric", "dev_metric_key"))),
        "dev_score_before": before,
        "best_dev_score": best,
        "best_step": best_step,
        "final_model_step": final_step,
        "final_model_dev_score": final,
        "dev_scores_by_step": [[step, score] for step, score in scores],
        "dev_score_moved": moved,  # false: every evaluation scored the first value (said at the end)
        # [step, uniformity, alignment] on STS-B dev: the trajectory the grid's geometry section reads
        "dev_geometry_by_step": [list(entry) for entry in dev_geometry(state.log_history)],
        "train_loop_seconds": round(timing.loop_seconds, 2),
        "eval_seconds": round(timing.eval_seconds, 2),
        "steps_this_run": steps_here,
        "examples_per_second": round(examples_per_second, 2) if examples_per_second else None,
        "sentences_per_second": (
            round(examples_per_second * _sentences_per_example(config), 2) if examples_per_second else None
        ),
        "versions": {
            "lwap": lwap.__version__,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
        },
        "config": config.to_dict(),
    }


def _print_result(summary: dict[str, Any], out: Path) -> None:
    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.4f}"

    lines = [f"lwap train: finished {summary['steps']} steps; model saved to {summary['model_dir']}"]
    if summary["best_dev_score"] is not None or summary["dev_score_before"] is not None:
        dev_set, metric, _ = summary_dev(summary)
        lines.append(
            f"{dev_set} {metric}: before training {fmt(summary['dev_score_before'])}, "
            f"after training {fmt(summary['final_model_dev_score'])} "
            f"(model from step {summary['final_model_step']}; best {fmt(summary['best_dev_score'])} "
            f"at step {summary['best_step']})"
        )
    general = summary.get("general_sts")
    if general and not general["unavailable"]:
        lines.append(result_line(general, summary_dev(summary)[0]))
    speed = summary["sentences_per_second"]
    lines.append(
        f"wall time {summary['wall_time_seconds']:.0f} s "
        f"(training loop {summary['train_loop_seconds']:.0f} s, "
        f"of which evaluation {summary['eval_seconds']:.0f} s); "
        f"{'n/a' if speed is None else f'{speed:.1f}'} training sentences/s ({summary['precision']}, "
        f"{summary['processes']} process{'es' if summary['processes'] > 1 else ''})"
    )
    lines.append(f"summary: {out / outputs.SUMMARY_JSON}; curves: {out / outputs.CURVES_PNG}")
    print("\n".join(lines), flush=True)
    if general and general["unavailable"]:
        print(unavailable_note(general), file=sys.stderr, flush=True)
    if summary["dev_score_moved"] is False:
        first, evaluations = summary["dev_scores_by_step"][0][1], len(summary["dev_scores_by_step"])
        print(
            f"lwap train: warning: the dev score never moved from {first:.4f} in {evaluations} evaluations: "
            f"check eval.dev ({summary_dev(summary)[0]})",
            file=sys.stderr,
            flush=True,
        )
