import hashlib
import json

import streamlit as st

from models.configlib import canonical_json, flatten, parse_layer
from models.product import ml_config_system as model
from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("ml-config-system")
SLUG = "ml-config-system"
LAST_HASH = f"{SLUG}.sim_last_hash"
STRICT = "Strict: typed schema, unknown keys rejected"
FLEXIBLE = "Flexible: anything that parses launches"


@page.diagram("config_flow")
def config_flow(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    valid = d.value("config_valid") == "yes"
    boxes = [
        Box("base", "base.toml", "every field · the team's defaults", 0, 0, "muted"),
        Box("exp", "experiment.toml", f"only the diff · {show('experiment_layer_keys')}", 0, 1),
        Box("cli", "Command line", f"--key=value · {show('command_line_keys')}", 0, 2),
        Box("pins", "Pins (launcher)", f"image digest, commit · data snapshot, manifest · {show('pinned_keys')}",
            0, 3, "accent"),
        Box("merge", "Resolve", "maps merge · lists, scalars replace · later wins, pins always", 1, 1.5),
        Box("check", "Validate + derive", f"errors: {show('validation_errors')} · "
            f"grad accum {show('grad_accum_steps')} · {show('total_steps')}", 2, 1.5, "accent" if valid else "danger"),
        Box("hash", "Hash", f"SHA-256, sorted-key JSON · {d.value('config_sha256')[:12]}… · "
            f"{show('resolved_config_bytes')}", 3, 1.5),
        Box("store", "Config store", f"{show('configs_per_year')} a year · {show('config_store_bytes')}", 3, 0,
            "muted"),
        Box("run", "Trainer", f"{show('gpus')} · reads only the {show('resolved_keys')} resolved" if valid
            else "not launched · no GPU spent", 3, 3, "default" if valid else "muted"),
    ]
    arrows = [
        Arrow("base", "merge", ""),
        Arrow("exp", "merge", ""),
        Arrow("cli", "merge", ""),
        Arrow("pins", "merge", "wins"),
        Arrow("merge", "check", "merged"),
        Arrow("check", "hash", "valid" if valid else "rejected"),
        Arrow("hash", "store", "by hash"),
        Arrow("hash", "run", "config + hash"),
    ]
    return box_diagram(boxes, arrows, title="Four layers in, one resolved config and one hash out", height=560)


@page.chart("relaunch_vs_gpus")
def relaunch_vs_gpus(ctx):
    p = ctx.params
    return sweep_figure(
        ctx.slug, p, "relaunch_gpus",
        {"relaunch_usable_gpus": "GPUs the exact relaunch can use", "relaunch_idle_gpus": "GPUs left idle"},
        title=f"Relaunching {p.global_batch:,}-sequence steps elsewhere (micro batch {p.micro_batch}, "
              f"{p.tensor_parallel * p.pipeline_parallel} GPUs per replica)",
        y_title="GPUs", n=241, lo=64, hi=min(16384, max(1024, 2 * p.relaunch_gpus)), line_shape="hv",
    )


@page.chart("silent_batch_vs_gpus")
def silent_batch_vs_gpus(ctx):
    p = ctx.params
    return sweep_figure(
        ctx.slug, p, "relaunch_gpus",
        {"relaunch_silent_batch_change_fraction": "Change of the global batch if the trainer rounds down"},
        title="Flooring the accumulation: what it silently does to the batch", y_title="% of the written batch",
        n=241, lo=64, hi=min(16384, max(1024, 2 * p.relaunch_gpus)), line_shape="hv",
    )


# ---------------------------------------------------------------------------------------------


def _differing_hex(a: str, b: str) -> int:
    return sum(x != y for x, y in zip(a, b))


@page.sim("resolver")
def resolver_panel(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown("##### Live resolver: edit any layer (TOML, or JSON starting with `{`), watch the verdict and "
                "the hash")
    examples = model.resolver_examples(p)
    cols = st.columns([3, 2])
    name = cols[0].selectbox("Start from", list(examples), key=f"{SLUG}.sim_example")
    mode = cols[1].radio("Schema", [STRICT, FLEXIBLE], key=f"{SLUG}.sim_mode")
    strict = mode != FLEXIBLE
    example = examples.get(name, examples["As written"])
    st.caption(example.look)
    # A new scenario or a new starting point resets the text areas; edits survive anything else.
    tag = hashlib.sha1(json.dumps([name, example.layers], sort_keys=True).encode()).hexdigest()[:8]
    texts = {}
    left, right = st.columns(2)
    for i, layer in enumerate(model.LAYER_NAMES):
        box = left if i < 2 else right
        texts[layer] = box.text_area(
            f"{i + 1}. {layer}" + (" (always wins)" if layer == "pins" else ""), example.layers[layer],
            height=330 if layer == "base" else (210 if i < 2 else 250), key=f"{SLUG}.sim_layer_{i}.{tag}",
        )

    parsed = {layer: parse_layer(layer.capitalize(), text) for layer, text in texts.items()}
    errors = [pl.error for pl in parsed.values() if pl.error]
    if errors:
        for e in errors:
            st.error(e, icon=":material/error:")
        st.info("Nothing resolves until every layer parses: a launcher that guessed would hash a config no one wrote.")
        return
    layers = [(layer, parsed[layer].data) for layer in model.LAYER_NAMES[:3]]
    res = model.resolve(layers, parsed["pins"].data, strict=strict)

    previous = st.session_state.get(LAST_HASH)
    st.session_state[LAST_HASH] = res.sha256
    m = st.columns(4)
    if strict:
        m[0].metric("Verdict", "valid" if res.valid else "rejected", border=True)
    else:
        m[0].metric("Verdict", "launches", border=True)
    m[1].metric("Schema findings", f"{len(res.issues)}", border=True)
    m[2].metric("SHA-256 (first 12)", res.sha256[:12], border=True)
    if previous and previous != res.sha256:
        m[3].metric("Hex digits changed", f"{_differing_hex(previous, res.sha256)} of 64", border=True)
    else:
        m[3].metric("Hex digits changed", "0 of 64" if previous else "-", border=True)
    same = res.sha256 == d.value("config_sha256")
    same_exp = res.experiment_sha256 == d.value("experiment_sha256")
    st.markdown(
        f"`config_sha256` **{res.sha256}** "
        f"({'equals' if same else 'differs from'} the page scenario's)  \n"
        f"`experiment_sha256` **{res.experiment_sha256}** "
        f"({'equals' if same_exp else 'differs from'} the page scenario's)"
    )

    for issue in res.issues:
        if strict:
            st.error(f"{issue.message}", icon=":material/block:")
        else:
            st.warning(f"{issue.message} **Launches anyway:** {issue.silently}.", icon=":material/warning:")
    for o in res.pinned_over:
        if o.layer not in ("base", "?"):
            st.warning(f"The {o.layer} layer set `{o.path}` = {json.dumps(o.was)}; the pin replaced it with "
                       f"{json.dumps(o.pinned)}. A pinned key cannot be overridden.", icon=":material/push_pin:")
    if res.valid and strict:
        st.success(f"Valid: {len(flatten(res.config))} settings, derived fields added, "
                   f"{res.canonical_bytes:,} bytes of canonical JSON.", icon=":material/check_circle:")

    out_l, out_r = st.columns([3, 2])
    with out_l:
        st.markdown("**Resolved config**" + (" (normalized, with derived fields)" if strict and res.valid else ""))
        st.json(res.config, expanded=2)
    with out_r:
        st.markdown("**Where each value came from**")
        flat = flatten(res.config)
        rows = [{"key": k, "value": json.dumps(v), "layer": res.provenance.get(k, "derived")} for k, v in flat.items()]
        st.dataframe(rows, hide_index=True, width="stretch", height=420)
    with st.expander("The exact bytes that are hashed"):
        st.code(canonical_json(res.config), language="json", wrap_lines=True)


page.render()
