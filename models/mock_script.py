"""The interviewer's script for a mock round, without any UI: the opening line, the clarifying
questions that reveal the givens, and the probes that arrive at each phase boundary.

Everything here is read from what a question already has (its hook, its knobs, its steps, its
drills, its Depth and Failure modes prose) by one set of rules, with small override tables where a
generated line reads badly. Prose comes back as Markdown templates with `{{name}}` placeholders;
the UI renders them against the round's derivation. No Streamlit, no plotly.
"""

from __future__ import annotations

import math
import re
import typing
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

from pydantic import ValidationError

from models import mock
from models.core import PHASES, _formula_names, knobs_of, values_only

# ---------------------------------------------------------------------------------------------
# The opening

# A hook is written to carry the page's numbers ("{{concurrent_users}} with a {{think_time_s}}
# think time put ..."); stripped of them, most read as fragments. So the rule below is only the
# fallback for a question without a line here, and each line is what an interviewer says before
# any given is on the table: the task and its framing, no figures.
OPENINGS: dict[str, str] = {
    "serving-platform": "Design the platform that serves a chat model to a large number of concurrent users, "
                        "from the API call to the GPU, and tell me how many GPUs it needs.",
    "interview-minute-plan": "Design the serving platform for a coding assistant: I want numbers, a shape, a GPU "
                             "count, depth on two topics and the failure modes, inside the round.",
    "continuous-batching": "Design the batching between an admission queue and a streamed token: how many tokens "
                           "per second does one replica earn, and what is its tail time per output token?",
    "batched-inference-api": "Clients send generation requests; a batch call to the GPUs is fixed and you cannot "
                             "change it. Design the layer that routes and batches them.",
    "rag-10k-qps": "Design retrieval-augmented answering at a very high query rate: embedder, index, reranker and "
                   "the answer model.",
    "multi-lora": "One platform serves many fine-tuned variants of the same base model. Design the serving.",
    "autoscaling-warm-pool": "Traffic can triple within a minute, and a new replica of a large model takes about as "
                             "long to become useful. Design the autoscaling.",
    "kv-cache-tiers": "A chat product keeps long conversations going. Where does each conversation's KV cache wait "
                      "between turns, and when is bringing it back worth more than recomputing it?",
    "token-rate-limiter": "Design rate limits for a multi-tenant LLM API, per tenant and per model.",
    "multi-region-failover": "We serve from several regions. Design it so that losing a region is survivable, and "
                             "tell me what happens in the first thirty seconds after one drops.",
    "playground-abuse": "Design the serving side of our free public playground: transport, quotas and abuse.",
    "ttft-slo-200ms": "Time to first token must stay under a tight target at a high percentile. Where does the time "
                      "go, and what does meeting it cost?",
    "agent-sessions": "Agents think for a moment, call a tool for a minute, and repeat many times. Design the "
                      "serving for these sessions.",
    "video-generation": "Design the serving for a video generation model.",
    "speculative-decoding": "Should our busy serving fleet use speculative decoding, and how would you decide?",
    "disaggregated-prefill-decode": "Someone proposes giving prefill and decode their own nodes and moving the KV "
                                    "cache between them. Is it worth it, and when?",
    "llm-gateway": "Many teams call several model providers with their own API keys, and nobody owns the bill. "
                   "Design an LLM gateway.",
    "moe-1t-serving": "Serve a trillion-parameter mixture-of-experts model on one rack. What does the rack buy you?",
    "serverless-gpu": "Design serverless GPU inference: answer a customer's first request within seconds and bill "
                      "only for the seconds the model runs.",
    "gpu-credit-ledger": "Design a GPU credit system for the teams sharing a cluster: a ledger with a scheduler "
                         "attached.",
    "cluster-10k-gpus": "Write the bill of materials for a ten-thousand-GPU training cluster.",
    "job-scheduler-100k": "Design a scheduler for a very large queue of GPU jobs, including preemption for urgent "
                          "ones.",
    "eval-pipeline": "Design the pipeline that evaluates every checkpoint of a training run.",
    "pretraining-data-pipeline": "Design the pipeline that turns petabytes of raw web text into the training tokens "
                                 "a pretraining run needs.",
    "model-artifact-distribution": "Ship a large model artifact to a fleet of serving nodes quickly and safely. "
                                   "Design the distribution.",
    "checkpoint-distribution": "Distribute a large checkpoint from one source to hundreds of hosts as fast as "
                               "possible.",
    "checkpoint-storage": "Design checkpoint storage for a training job that writes a burst of state at a fixed "
                          "interval.",
    "inference-observability": "Design the observability for an inference fleet: metrics, traces and usage.",
    "gpu-cloud-control-plane": "Design the control plane for a GPU cloud that rents whole servers or fabric slices "
                               "to tenants.",
    "research-cluster-fair-share": "Design fair sharing of a research GPU cluster between several teams.",
    "training-disaster-recovery": "Design disaster recovery for a months-long training run in a single building.",
    "usage-billing-pipeline": "Design usage billing for an LLM API, where a dropped event is lost money.",
    "moe-1t-training": "Plan the training of a trillion-parameter mixture-of-experts model: storage, compute and "
                       "the cluster.",
    "design-doc-review": "Here is a design document for an inference server. Review it.",
    "prompt-playground-product": "Design a prompt playground as a product: prompts, versions, conversations and "
                                 "sharing.",
    "chat-one-to-one": "Design a one-to-one chat system.",
    "data-platform-sensitivity": "Design a data platform shared by stakeholders with different clearance levels.",
    "ml-config-system": "Design the configuration system for training runs.",
}

_DIGIT = re.compile(r"\d")


def _opening_by_rule(hook: str, title: str) -> str:
    """The hook's clauses that carry no number, if they make a sentence; else the title as a task.
    A clause with a placeholder or a digit is dropped whole: removing only the number leaves
    fragments ("with a think time put in flight")."""
    clauses = [c.strip() for c in re.split(r"[:;]|(?<=\.)\s", hook) if c.strip()]
    kept = [c.rstrip(".") for c in clauses if "{{" not in c and not _DIGIT.search(c)]
    text = "; ".join(kept)
    if len(text.split()) >= 6:
        return _sentence(text)
    if not _DIGIT.search(title):
        return _sentence(f"Design this: {title[0].lower() + title[1:] if not title[1:2].isupper() else title}")
    return "Here is the problem. Walk me through your design."


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


def opening(question) -> str:
    """The question as an interviewer says it in one line, without its numbers."""
    return OPENINGS.get(question.slug) or _opening_by_rule(question.hook, question.title)


# ---------------------------------------------------------------------------------------------
# Givens and which of them matter


def given_names(params: Any) -> list[str]:
    """Knob names of `models.mock.givens(params)`, in the same order (same filter: a knob that only
    drives the simulation is not a given, nor a custom part's number while a catalog one is picked)."""
    out = []
    for name, knob in knobs_of(type(params)).items():
        if knob.simulation:
            continue
        if knob.only_if and getattr(params, knob.only_if[0]) != knob.only_if[1]:
            continue
        out.append(name)
    return out


def key_figures(question) -> list[str]:
    """Step keys a round is judged on: the page's metric cards, then its drills."""
    out: list[str] = []
    for key in [k for k, _ in question.content.metrics] + [d.key for d in question.drills]:
        if key not in out:
            out.append(key)
    return out


def _moves(params: Any, name: str, limit: int = 3):
    """Up to `limit` scenarios with knob `name` changed to another value it allows."""
    cls = type(params)
    info = cls.model_fields[name]
    knob = knobs_of(cls)[name]
    value = getattr(params, name)
    candidates: list[Any] = []
    if typing.get_origin(info.annotation) is Literal:
        candidates = [c for c in typing.get_args(info.annotation) if c != value]
    elif info.annotation is bool:
        candidates = [not value]
    elif isinstance(value, (int, float)):
        lo = knob.min if knob.min is not None else -math.inf
        hi = knob.max if knob.max is not None else math.inf
        for x in (value * 1.5, value * 0.6, value + 1, value - 1, (lo + hi) / 2 if math.isfinite(lo + hi) else value):
            if info.annotation is int:
                x = int(round(x))
            if x != value and lo <= x <= hi:
                candidates.append(x)
    made = 0
    for c in candidates:
        if made >= limit:
            return
        try:
            moved = cls(**{**params.__dict__, name: c})
        except (ValidationError, ValueError):
            continue
        made += 1
        yield moved


def important_givens(question, params: Any | None = None, include_folded: bool = False) -> set[str]:
    """Knob names a key figure depends on.

    The engine's efficiencies and fixed costs (knobs in a `fold`) move nearly every figure but are
    stated assumptions, not something a candidate is marked down for not asking; they count only
    with `include_folded`.

    The dependency is read from the step formulas' placeholders, transitively, at the seed
    scenario. A step without a formula (a catalog lookup: a model's parameter count, a GPU's
    bandwidth) names nothing, so the chain would stop at it; for those, the knobs that move its
    value when changed are its dependencies, which is what the lookup reads."""
    params = params if params is not None else question.Params()
    derivation = question.solve(params)
    knobs = knobs_of(type(params))
    givens = set(given_names(params))
    reached: set[str] = set()
    formula_less: set[str] = set()
    stack = list(key_figures(question))
    while stack:
        key = stack.pop()
        if key in reached:
            continue
        reached.add(key)
        if key in knobs or key not in derivation:
            continue
        names = _formula_names(derivation[key].formula) if derivation[key].formula else ()
        if not names:
            formula_less.add(key)
        stack.extend(names)
    important = {k for k in reached if k in knobs}
    if formula_less:
        with values_only():
            base = question.solve(params)
            for name in sorted(givens - important):
                for moved in _moves(params, name):
                    try:
                        other = question.solve(moved)
                    except Exception:  # noqa: BLE001 - a moved scenario the solver rejects says nothing
                        continue
                    if any(_differs(base.value(k), other.value(k)) for k in formula_less
                           if k in base and k in other):
                        important.add(name)
                        break
    if not include_folded:
        important = {k for k in important if not knobs[k].fold}
    return important & givens


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a != b


# ---------------------------------------------------------------------------------------------
# Clarifying questions


@dataclass(frozen=True)
class Clarifier:
    key: str          # the knob name of the given it reveals
    ask: str          # how a strong candidate asks for it
    answer: str       # Markdown template stating the given
    important: bool   # a key figure depends on it


# How a candidate asks for a given, by knob name, where the rule from the label reads badly or a
# better question exists. Shared across questions: the same knob name means the same thing.
ASKS: dict[str, str] = {
    "gpu": "Which GPU?",
    "model": "Which model?",
    "tp_degree": "How many GPUs per replica?",
    "weight_precision": "What precision are the weights in?",
    "kv_precision": "What precision is the KV cache in?",
    "compute_precision": "What precision does the math run in?",
    "prompt_tokens": "How long are the prompts?",
    "output_tokens": "How long are the answers?",
    "input_tokens": "How long are the inputs?",
    "reply_tokens": "How long is a reply?",
    "tpot_target_ms": "What latency target per output token (TPOT)?",
    "ttft_slo_ms": "What latency target for the first token (TTFT)?",
    "slo_ms": "What is the TTFT target?",
    "slo_percentile": "At what percentile does the TTFT target hold?",
    "latency_target_ms": "What latency target, and at what percentile?",
    "peak_rps": "What is the peak traffic?",
    "peak_to_average": "Is that peak or average traffic: how much higher is the peak?",
    "requests_per_s": "What is the average request rate?",
    "events_per_s": "How many events per second, on average?",
    "qps": "What query rate?",
    "arrival_rps": "What is the arrival rate?",
    "request_rate": "What load, in requests per second?",
    "base_rps": "What is the base traffic?",
    "concurrent_users": "How many concurrent users?",
    "think_time_s": "How long do users think between a reply and their next message?",
    "target_utilization": "How busy may a replica run at peak?",
    "prefix_cache_hit": "How much of each prompt is already in the prefix cache?",
    "usable_hbm_fraction": "How much of HBM is usable for weights and KV?",
    "hbm_efficiency": "What share of peak HBM bandwidth does a decode step achieve (MBU)?",
    "decode_mfu": "What MFU does decode reach when compute binds?",
    "prefill_mfu": "What MFU does prefill reach?",
    "train_mfu": "What MFU does training reach?",
    "step_overhead_ms": "What fixed cost does every engine step pay?",
    "allreduce_latency_us": "What latency does one all-reduce cost?",
    "attention_flops": "Do we count attention FLOPs?",
    "given_batch": "Is the decode batch given, or do I derive it?",
    "gpu_hour_usd": "What does a GPU-hour cost?",
    "network_ms": "How long does the network take?",
    "routing_ms": "How long do the gateway and routing take?",
    "regions": "How many regions?",
    "utilization": "How busy is each region today?",
    "pipeline_parallel": "What pipeline-parallel degree?",
    "tensor_parallel": "What tensor-parallel degree?",
    "data_parallel": "What data-parallel size?",
    "weights_prestaged": "Are the weights already staged in every region?",
    "round_to_whole_pods": "Do we build whole pods only?",
    "charge_by_allocation": "Is usage charged by allocation?",
    "overlap_a2a": "Does the all-to-all overlap with compute?",
    "busy_fraction": "What share of the GPUs is busy?",
    "pue": "What is the facility's PUE?",
    "turns": "How many turns in a conversation?",
    "steps": "How many steps in a session?",
    "variants": "How many fine-tuned variants?",
    "versions": "How many versions of a prompt?",
    "hosts": "How many hosts to reach?",
    "jobs": "How many jobs in the queue?",
    "teams": "How many teams?",
    "providers": "How many providers?",
    "transport": "Which transport do clients stream over?",
    "retry_policy": "How do clients retry?",
    "weight_source": "Where do the weights come from?",
    "vector_format": "How are the vectors stored?",
    "kv_link": "Which NIC carries the KV hand-off?",
    "a2a_path": "What carries the all-to-all?",
    "nic": "Which NIC per GPU?",
    "training_state": "How many bytes of training state per parameter?",
    "sp_degree": "How many GPUs per job?",
    "params_b": "How many parameters does the model have?",
    "dit_params_b": "How big is the diffusion transformer?",
    "aspect": "What aspect ratio?",
    "height_px": "What resolution?",
    "fps": "What frame rate?",
    "frames": "How many frames in a clip?",
    "classifier_free_guidance": "Is classifier-free guidance on?",
    "core_taper": "Is the core tapered, and how much?",
    "switch_radix": "How many ports per switch?",
    "tree_fanout": "What tree fan-out?",
    "min_insync_replicas": "What is min.insync.replicas?",
    "milestone_contents": "What does a milestone keep?",
    "keep_last": "How many recent checkpoints are kept?",
    "status_codes": "How many status values?",
    "copies": "How many copies are billed?",
    "layers": "How many layers hold the weights?",
    "targets": "Which projections does the adapter target?",
    "histogram_buckets": "How many histogram buckets?",
    "dispatchers": "How many independent dispatchers?",
    "gateway_nodes": "How many gateway nodes?",
    "routes": "How many routes?",
    "aliases": "How many model aliases?",
    "vocab_size": "How big is the tokenizer vocabulary?",
    "concurrent_sessions": "How many concurrent sessions?",
    "heap_step_ns": "What does one heap level cost?",
    "per_job_check_us": "How long does evaluating one job take?",
    "system_prompt_tokens": "How long are the instructions (the system prompt)?",
    "downstream_tables": "How many tables sit downstream of the bad source?",
    "doc_spare_gpus": "How many spare GPUs did the author add?",
    "need_gpus": "How many GPUs does the urgent job need?",
    "abuser_tokens_per_day": "How many tokens a day does someone reselling the free tier want?",
    "burst_ramp_s": "How fast does the burst arrive?",
    "first_token_ms": "How long does the first token take once prefill is done?",
    "kv_overcommit": "How far beyond the full-context cap do we admit?",
    "sha256_MBps": "How fast is SHA-256 on one core?",
    "gzip_MBps": "How fast does gzip decompress on one core?",
    "extract_MBps": "How fast does extraction write to disk?",
    "peak_online_fraction": "What share of users is online at the peak?",
    "fleet_average_utilization": "How busy is the free fleet on a daily average?",
    "allocated_fraction": "What share of the fleet is allocated to tenants?",
    "residency_fraction": "How much of the traffic must stay in its home region?",
    "gate_catch_fraction": "What share of bad nodes does the health gate catch?",
    "evals_hold_fraction": "What share of the cluster do evals hold?",
    "state_share_of_hbm": "How much of HBM holds training state?",
    "duplicate_fraction": "What share of deliveries are duplicates?",
    "largest_eval_x_mean": "How much bigger is the largest eval than the mean one?",
    "derived_fraction": "How big are the derived tables, relative to bronze?",
    "demand_evals": "How much do evals really use, against their share?",
    "demand_interp": "How much does interpretability demand when it returns, against its share?",
    "demand_posttrain": "How much does post-training demand with the sweep, against its share?",
    "demand_pretrain": "How much does pretraining demand, against its share?",
    "demand_evals_gpus": "How many GPUs do evals demand?",
    "demand_posttraining_gpus": "How many GPUs does post-training demand?",
    "demand_pretraining_gpus": "How many GPUs does pretraining demand?",
    "demand_research_gpus": "How many GPUs does research demand?",
    "hourly_active_fraction": "What share of tenant-model hours see any traffic?",
    "round_minutes": "How long is the round?",
    "free_max_tokens": "What max_tokens cap does the free tier get?",
    "bytes_per_token": "How many bytes of text make a token?",
    "think_s": "How long does the agent think per step?",
    "tool_s": "How long does a tool call take per step?",
    "gpus": "How many GPUs?",
    "nodes": "How many nodes?",
    "tenants": "How many tenants?",
    "request_latency_s": "How long does a request take?",
    "mean_request_s": "How long does a request take, on average?",
}

# (question slug, knob) -> ask, where the same knob name reads differently on one page.
ASKS_BY_QUESTION: dict[tuple[str, str], str] = {}

# Verbs a label may start with ("Detect the site loss", "Build whole pods"): asked as an action.
_LABEL_VERBS = {"detect", "decide", "launch", "reboot", "save", "restart", "keep", "build", "count", "admit",
                "overlap", "charge"}
_TIME_UNITS = {"s", "ms", "µs", "us", "ns", "min", "h", "days", "d", "months"}
_SIZE_UNITS = {"B", "kB", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "M params", "billion"}
_RATE_UNITS = {"Gb/s", "GB/s", "MB/s", "TB/h", "Mb/s", "MB/s/core"}
# Words that end the noun a label starts with ("Bytes per event", "Free accounts allowed per
# device"): the word before the first of them is the head noun, whose number picks "How many".
_HEAD_END = {"per", "of", "in", "on", "for", "with", "to", "at", "before", "after", "that", "one", "the", "a",
             "an", "from", "by", "during", "without", "besides", "beyond", "kept", "allowed", "delivered",
             "dropped", "answered", "added", "launched", "sent", "evaluated", "missed", "reranked", "indexed",
             "resuming", "writing", "budgeted", "packed", "routed", "serving", "verifying", "striped", "held",
             "each", "reserved", "left", "holding", "between", "since", "until", "needs", "is", "are"}
_ARTICLES = ("a ", "an ", "one ", "that ")


def _lower_first(text: str) -> str:
    """Lower-case the first word unless it is an acronym or a name ("TTFT SLO", "Kafka brokers")."""
    word = text.split(" ", 1)[0]
    if any(ch.isupper() for ch in word[1:]) or word in {"Kafka", "Llama", "Docker", "NVLink", "Redis"}:
        return text
    return text[:1].lower() + text[1:]


def _plural_head(label: str) -> bool:
    words = label.split()
    head = words[0]
    for i, w in enumerate(words):
        if i and w.lower() in _HEAD_END:
            break
        head = w
    head = head.split("/", 1)[0].rstrip(",")
    return len(head) > 2 and head.endswith("s") and not head.endswith(("ss", "us", "is"))


def ask_by_rule(name: str, knob, annotation, value: Any) -> str:
    """A candidate's question for one given, from the knob's label and unit."""
    label = re.sub(r"\s*\([^)]*\)", "", knob.label).strip() or knob.label
    if ":" in label:  # "Sweep: GPUs per run" -> "Sweep: how many GPUs per run?"
        head, tail = (part.strip() for part in label.split(":", 1))
        inner = type(knob)(**{**knob.__dict__, "label": tail})
        return f"{head}: {_lower_first(ask_by_rule(name, inner, annotation, value))}"
    words = label.split()
    first, last = words[0].lower(), words[-1].lower()
    lower = _lower_first(label)
    unit = knob.unit or ""
    choices = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else ()
    if annotation is bool:
        return f"Do we {lower}?" if first in _LABEL_VERBS else f"{label}: yes or no?"
    if isinstance(value, str) or (choices and not all(isinstance(c, (int, float)) for c in choices)):
        return f"Which {lower}?"
    if last == "every" and len(words) > 1:  # "Snapshot every" -> "How often is a snapshot?"
        return f"How often is a {_lower_first(' '.join(words[:-1]))}?"
    if first in _LABEL_VERBS and unit in _TIME_UNITS and last not in {"cost", "rate", "time"}:
        return f"How long does it take to {lower}?"
    if knob.percent or unit == "%":
        return f"What share of {lower}?" if _plural_head(label) else f"What is the {lower}?"
    if _plural_head(label):
        if first == "mean" and len(words) > 1:
            return f"How many {_lower_first(' '.join(words[1:]))}, on average?"
        return f"How many {lower}?"
    if lower.lower().startswith(_ARTICLES):
        return f"What is {lower}?"
    if unit in _SIZE_UNITS:
        thing = re.sub(r"\s+size$", "", lower)
        return f"How big is the {thing}?"
    if unit in _TIME_UNITS:
        return f"How long is the {lower}?"
    if unit in _RATE_UNITS and not re.search(r"rate|speed|throughput|bandwidth", lower):
        return f"How fast is the {lower}?"
    return f"What is the {lower}?"


def _ask(question, name: str, knob, annotation, value: Any) -> str:
    return (ASKS_BY_QUESTION.get((question.slug, name)) or ASKS.get(name)
            or ask_by_rule(name, knob, annotation, value))


def clarifiers(question, params: Any | None = None) -> list[Clarifier]:
    """One clarifying question per given of the round's scenario (the seed one unless `params`):
    important first, then in knob order. Solves the page a few times (see important_givens): a
    UI that reruns should keep the result per scenario."""
    params = params if params is not None else question.Params()
    cls = type(params)
    knobs = knobs_of(cls)
    important = important_givens(question, params)
    out = []
    for name in given_names(params):
        knob = knobs[name]
        annotation = cls.model_fields[name].annotation
        value = getattr(params, name)
        label = re.sub(r"\s*\([^)]*\)", "", knob.label).strip() or knob.label
        out.append(Clarifier(
            key=name,
            ask=_ask(question, name, knob, annotation, value),
            answer=f"{label}: {{{{{name}}}}}.",
            important=name in important,
        ))
    return sorted(out, key=lambda c: not c.important)  # stable: knob order within each group


# Words that carry no request for a particular given ("what are all the numbers?").
_STOP = set("""
a about all an and any anything are as at be big by can could do does each every everything for
from give given givens have how i in is it its large long many me much my number numbers of on or
our please say should so some tell that the their them there these this those to us value values
was we what whats when where which who why will with would you your s per assume assumption
assumptions detail details figure figures info information
""".split())

# Words that name the same given in different words; each maps to one canonical word.
_SYNONYMS: dict[str, str] = {}
for _group in (
    ("traffic", "qps", "request", "rps", "query", "load", "throughput", "arrival"),
    ("model", "params", "param", "parameter", "llm"),
    ("gpu", "accelerator", "hardware", "chip", "device", "h100", "h200", "b200"),
    ("latency", "ttft", "tpot", "slo", "target", "deadline"),
    ("output", "answer", "reply", "response", "completion", "generation", "generated"),
    ("prompt", "input", "context"),
    ("user", "people", "person", "customer"),
    ("think", "pause"),
    ("precision", "dtype", "quantization", "quantized", "fp8", "bf16", "fp16", "int8"),
    ("price", "cost", "usd", "dollar", "pay", "priced"),
    ("average", "mean", "typical"),
    ("utilization", "busy", "headroom", "utilisation"),
    ("cache", "cached", "caching"),
    ("replica", "instance"),
):
    for _word in _group:
        _SYNONYMS[_word] = _group[0]
# Unit suffixes in knob names ("peak_rps", "checkpoint_gb") say nothing a person asks for.
_KEY_NOISE = {"s", "ms", "us", "ns", "gb", "tb", "mb", "kb", "b", "gbps", "mbps", "usd", "h", "min", "pct",
              "m", "t", "w", "mw", "per", "gib", "kib", "bps", "tok"}


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str, noise: Iterable[str] = ()) -> set[str]:
    out = set()
    noise = set(noise)
    for raw in re.findall(r"[a-z0-9]+", text.lower().replace("'", "")):
        if raw in _STOP or raw in noise:
            continue
        word = _stem(raw)
        if word in _STOP:
            continue
        out.add(_SYNONYMS.get(word, _SYNONYMS.get(raw, word)))
    return out


def _vocabulary(c: Clarifier) -> dict[str, float]:
    """Word -> weight: the knob's own name and label count fully; a word only in the phrasing of the
    ask ("between a reply and their next message") counts half, so it cannot outvote a given whose
    name says the word."""
    label = re.sub(r"\{\{[^}]*\}\}", "", c.answer)
    own = _words(label) | _words(c.key.replace("_", " "), _KEY_NOISE)
    return {**{w: 0.5 for w in _words(c.ask)}, **{w: 1.0 for w in own}}


def match_question(text: str, clarifiers: Sequence[Clarifier], limit: int = 3) -> list[Clarifier]:
    """The givens a typed question asks for, best first; empty if nothing matches.

    Each word of the question (stop words out, synonyms folded, plurals stemmed) picks the given
    that says it most plainly: in its name or label rather than only in its ask, and with the
    fewest other words (so "hosts" picks "Hosts to reach", not "Link speed per host"). Every
    word's pick is returned, best overall first, at most `limit`; a question made only of general
    words ("what are all the numbers?") has no words left and reveals nothing."""
    asked = _words(text)
    if not asked or not clarifiers:
        return []
    vocab = [_vocabulary(c) for c in clarifiers]
    df = {w: sum(w in v for v in vocab) for w in asked}
    score = [sum(v[w] / df[w] for w in asked if w in v) for v in vocab]
    coverage = [sum(w in v for w in asked) / len(v) if v else 0.0 for v in vocab]
    chosen: list[int] = []
    for w in sorted(asked):
        holders = [i for i, v in enumerate(vocab) if w in v]
        if not holders:
            continue
        best = max(holders, key=lambda i: (vocab[i][w], coverage[i], clarifiers[i].important, -i))
        if best not in chosen:
            chosen.append(best)
    chosen.sort(key=lambda i: (-score[i], -coverage[i], not clarifiers[i].important, i))
    return [clarifiers[i] for i in chosen[:limit]]


def clarify_review(clarifiers: Sequence[Clarifier], asked_s: Mapping[str, float], numbers_end_s: float
                   ) -> tuple[list[Clarifier], list[Clarifier]]:
    """(important givens never asked, important givens asked after the numbers phase ended).
    `asked_s`: knob name -> seconds into the round when the candidate asked for it."""
    never = [c for c in clarifiers if c.important and c.key not in asked_s]
    late = [c for c in clarifiers if c.important and c.key in asked_s and asked_s[c.key] > numbers_end_s]
    return never, late


# ---------------------------------------------------------------------------------------------
# Probes


@dataclass(frozen=True)
class Probe:
    key: str                  # unique within the question
    phase: str                # "numbers" | "shape" | "arithmetic" | "depth" | "failure_modes"
    kind: str                 # "drill" (scored like a drill) | "words" (answered in the document)
    text: str                 # the interviewer's line, Markdown template
    drill_key: str | None     # for kind "drill"
    answer: str               # the page's own answer, Markdown template (for the review)
    area: str | None = None   # the depth area it belongs to


@dataclass(frozen=True)
class _Block:
    title: str | None  # the bold lead, without its closing punctuation; None for a plain block
    text: str          # the block's Markdown, directives out


_BOLD_LEAD = re.compile(r"^(?:(?:[-*]|\d+\.)\s+)?\*\*(.+?)\*\*")
_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s+")


def _blocks(body: str) -> list[_Block]:
    """A section's paragraphs and top-level list items, each with its bold lead if it has one.

    A list whose items carry no bold lead stays one block (it continues the paragraph before it);
    each bold-led item is its own block. Directive lines (`::chart x`) and headings are dropped."""
    chunks: list[list[str]] = []
    for para in re.split(r"\n\s*\n", body):
        lines = [ln for ln in para.splitlines() if not ln.strip().startswith(("::", "#"))]
        if not any(ln.strip() for ln in lines):
            continue
        current: list[str] = []
        for ln in lines:
            if _ITEM.match(ln) and _BOLD_LEAD.match(ln) and current:
                chunks.append(current)
                current = []
            current.append(ln)
        chunks.append(current)
    out = []
    for lines in chunks:
        text = "\n".join(lines).strip()
        m = _BOLD_LEAD.match(text)
        title = m.group(1).strip().rstrip(".:;,").strip() if m else None
        out.append(_Block(title or None, text))
    return out


# Bold leads that are not a topic: a page's timing note inside its Depth and Failure modes.
NOT_A_TOPIC: set[tuple[str, str]] = {
    ("interview-minute-plan", "Clock"),
}

# (slug, title) -> the interviewer's line, where the rule reads badly.
DEPTH_LINES: dict[tuple[str, str], str] = {
    ("kv-cache-tiers", "What it buys"): "What do the tiers buy you?",
    ("kv-cache-tiers", "When the tier is worth its complexity"): "When is a tier worth its complexity?",
    ("research-cluster-fair-share", "Why 2^(−u/s)"): "Why does the fair-share factor decay as two to the "
                                                     "minus usage over share?",
    ("moe-1t-serving", "What router imbalance costs depends on the phase"):
        "What does router imbalance cost, and does it depend on the phase?",
    ("moe-1t-training", "This is a default, not a law"): "Is that split a default or a law?",
    ("token-rate-limiter", "A trace"): "Can you walk me through a trace of one tenant's requests?",
    ("playground-abuse", "Abuse"): "How do you handle abuse?",
    ("prompt-playground-product", "Export"): "How does export work?",
    ("prompt-playground-product", "Large prompts"): "What changes for very large prompts?",
    ("continuous-batching", "Watch it run"): "Can you walk me through a run of the batcher, step by step?",
    ("speculative-decoding", "Monitoring"): "How do you monitor it?",
    ("moe-1t-serving", "Overlap"): "Can the all-to-all overlap with compute?",
    ("agent-sessions", "Affinity"): "How do you keep a session's state close to where it runs?",
    ("agent-sessions", "The sandbox"): "Where does the sandbox live between steps?",
    ("checkpoint-distribution", "Integrity"): "How do you know every host got the right bytes?",
    ("checkpoint-storage", "Lineage"): "How do you track which checkpoint came from which?",
    ("usage-billing-pipeline", "Drop"): "An event never reaches the broker: how do you guard against that?",
    ("usage-billing-pipeline", "Duplicate"): "An event arrives twice: how do you guard against that?",
    ("usage-billing-pipeline", "Late"): "An event arrives hours after its month closed: how do you guard against "
                                        "that?",
    ("usage-billing-pipeline", "Reordered"): "Events arrive out of order: how do you guard against that?",
    ("usage-billing-pipeline", "Mis-priced"): "A price changes mid-month: how do you keep the bill right?",
    ("usage-billing-pipeline", "Mis-attributed"): "An API key moves to another tenant mid-month: how do you keep "
                                                  "the bill right?",
    ("ml-config-system", "Reproducibility, concretely"): "What does reproducible mean here, concretely, and how "
                                                         "do you test it?",
    ("ml-config-system", "Short and flexible against strict and typed"): "Short and flexible configs, or strict "
                                                                         "and typed ones: which, and why?",
    ("prompt-playground-product", "Three kinds of share"): "What kinds of sharing are there, and how does each "
                                                          "work?",
    ("cluster-10k-gpus", "Failure rate"): "How often do GPUs in a cluster this size fail?",
    ("design-doc-review", "The alternative, inside the contract"): "What alternative would you propose inside the "
                                                                   "same contract?",
    ("research-cluster-fair-share", "The equilibrium"): "Where does the fair-share factor settle, and why?",
    ("job-scheduler-100k", "Reserve what you free"): "A job exits and its GPUs look free: who gets them, and when?",
    ("playground-abuse", "A refresh mid-reply"): "A user refreshes the page mid-reply: what happens to the "
                                                 "generation?",
    ("serverless-gpu", "Making the snapshot real"): "How do you make the memory snapshot real?",
}
FAILURE_LINES: dict[tuple[str, str], str] = {
    ("data-platform-sensitivity", "Detect"): "Bad data gets in: how do you detect it?",
    ("data-platform-sensitivity", "Quarantine"): "Once you have found it: how do you quarantine it?",
    ("data-platform-sensitivity", "Backfill"): "How do you backfill after bad data, and how long does it take?",
    ("data-platform-sensitivity", "The blast radius"): "Bad data lands in a source table: what is the blast "
                                                       "radius?",
    ("cluster-10k-gpus", "Burn-in"): "A new fleet fails faster than a mature one: what do you do about it?",
    ("model-artifact-distribution", "Disk"): "A node's disk fills up or fails: what happens, and what do you do?",
    ("checkpoint-distribution", "Readiness"): "When is a host ready to load, and what if you get that wrong?",
    ("token-rate-limiter", "Clocks"): "The counters' clocks disagree: what happens, and what do you do?",
    ("playground-abuse", "Deploys"): "You deploy mid-stream: what happens, and what do you do?",
    ("research-cluster-fair-share", "Checkpoint interval"): "Checkpoints are too far apart: what happens, and "
                                                            "what do you do?",
    ("research-cluster-fair-share", "Thrash"): "Jobs preempt each other back and forth: what happens, and what "
                                               "do you do?",
}

_FOLLOW_UPS = ("And what follows from that?", "What else would you add there?", "Anything more on that?")
_QUESTION_WORDS = ("what ", "when ", "where ", "how ", "which ", "who ")


# Finite verbs the page's titles use: a title with one is a claim ("Prefill and decode share a
# replica") and is put to the candidate as one; without, it is a topic ("Chunked prefill").
_VERBS = {"is", "are", "was", "share", "shares", "sets", "set", "wins", "win", "buys", "buy", "beats", "beat",
          "follows", "follow", "belongs", "earns", "decides", "decide", "make", "makes", "resume", "resumes",
          "sits", "goes", "dies", "fails", "stall", "stalls", "loses", "lose", "need", "needs", "keeps", "keep",
          "get", "gets", "runs", "eats", "drift", "falls", "disappears", "melts", "takes", "shows", "spills",
          "outruns", "leak", "wrap", "stops", "copies", "converge", "survives", "must", "cannot", "does", "do",
          "changes", "costs", "should", "can", "depends"}


def _is_claim(title: str) -> bool:
    words = re.findall(r"[A-Za-z']+", title.lower())
    return any(w in _VERBS and (i == 0 or words[i - 1] != "that") for i, w in enumerate(words))


def _depth_line(title: str) -> str:
    low = _lower_first(title)
    if title.endswith("?"):
        return title
    if low.startswith(("why ",) + _QUESTION_WORDS):
        return f"Can you explain {low}?"
    if _is_claim(title):
        return f"{title}: how does that change your design?"
    return f"Tell me more about {low}: how does it work here?"


def _failure_line(title: str) -> str:
    title = title.rstrip("?")
    return f"{title}: what happens, and what do you do?"


def _areas(question) -> list[tuple[str, list[_Block]]]:
    section = question.content.section("Depth")
    if section is None:
        return []
    areas: list[tuple[str, list[_Block]]] = []
    for block in _blocks(section.body):
        if block.title and (question.slug, block.title) not in NOT_A_TOPIC:
            areas.append((block.title, [block]))
        elif areas:
            last = areas[-1][1]
            if _ITEM.match(block.text) and block.title is None:
                # a plain list continues the paragraph that introduces it
                last[-1] = _Block(last[-1].title, last[-1].text + "\n\n" + block.text)
            else:
                last.append(block)
    return areas


def depth_areas(question) -> list[str]:
    """The Depth section's topics: the titles of its bold-led paragraphs and items."""
    return [title for title, _ in _areas(question)]


def failure_modes(question) -> list[tuple[str, str]]:
    """(title, Markdown) of every bold-led bullet or paragraph of the Failure modes section."""
    section = question.content.section("Failure modes")
    if section is None:
        return []
    return [(b.title, b.text) for b in _blocks(section.body)
            if b.title and (question.slug, b.title) not in NOT_A_TOPIC]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "item"


def probes(question, depth_choice: str | None = None, params: Any | None = None,
           derivation: Any | None = None) -> dict[str, list[Probe]]:
    """The interviewer's probes per phase: the phase's drills (scored), then words probes from the
    Depth area chosen (the first when None) and from every failure mode the page names.

    Given the round's scenario (`params`, and its `derivation` if already solved), only the drills
    that scenario can ask are probes (models.mock.drills_for: a drill whose `when` conditions fail,
    say a cut-off time when the drawn policy blocks, is not asked); without, every drill is."""
    drills = tuple(question.drills)
    if params is not None:
        drills = mock.drills_for(question, params, derivation if derivation is not None else question.solve(params))
    areas = _areas(question)
    titles = [t for t, _ in areas]
    if depth_choice is not None and depth_choice not in titles:
        raise ValueError(f"'{depth_choice}' is not a depth area of this question; the areas are: "
                         f"{', '.join(titles) or '(none)'}")
    chosen = depth_choice if depth_choice is not None else (titles[0] if titles else None)
    area_text = {t: "\n\n".join(b.text for b in blocks) for t, blocks in areas}
    out: dict[str, list[Probe]] = {p: [] for p in PHASES}
    used: set[str] = set()

    def unique(key: str) -> str:
        k, n = key, 2
        while k in used:
            k, n = f"{key}-{n}", n + 1
        used.add(k)
        return k

    for d in drills:
        area = next((t for t, text in area_text.items() if re.search(r"\{\{\s*" + re.escape(d.key) + r"\b", text)),
                    None) if d.phase == "depth" else None
        answer = f"{{{{{d.key}}}}}"
        out[d.phase].append(Probe(unique(f"drill:{d.key}"), d.phase, "drill", d.question, d.key, answer, area))
    for title, blocks in areas:
        if title != chosen:
            continue
        for i, block in enumerate(blocks):
            if i == 0:
                text = DEPTH_LINES.get((question.slug, title)) or _depth_line(title)
            else:
                text = DEPTH_LINES.get((question.slug, f"{title}#{i}")) or _FOLLOW_UPS[(i - 1) % len(_FOLLOW_UPS)]
            out["depth"].append(Probe(unique(f"depth:{_slug(title)}:{i}"), "depth", "words", text, None,
                                      block.text, title))
    for title, text in failure_modes(question):
        line = FAILURE_LINES.get((question.slug, title)) or _failure_line(title)
        out["failure_modes"].append(Probe(unique(f"failure:{_slug(title)}"), "failure_modes", "words", line, None,
                                          text))
    return out
