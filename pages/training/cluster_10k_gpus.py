from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("cluster-10k-gpus")


@page.diagram("fabric")
def fabric(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    other_pods = d.value("pods") - 1
    boxes = [
        Box("power", "Power", f"{show('it_load_MW')} IT at nameplate · {show('facility_power_MW')} feed at PUE {p.pue:g}",
            0, 0, "muted"),
        Box("core", "Core", f"{show('core_switches')} · {p.switch_radix} ports, all down to spines", 1, 0),
        Box("pods", "Other pods", f"{other_pods:,} more like this one" if other_pods else "none: one pod, no core",
            2, 0, "muted"),
        Box("spine", "Spines (per pod)", f"{d.value('spine_switches') // max(d.value('pods'), 1):,} per pod · "
            f"{show('leaf_down_ports')} down, {show('spine_up_ports')} up, {show('spine_idle_ports')} empty", 1, 1),
        Box("leaf", "Rail leaves (per pod)", f"{show('rails')} × {d.value('nodes_per_pod') // d.value('leaf_down_ports'):,} per pod · "
            f"{show('leaf_down_ports')} down, {show('leaf_down_ports')} up", 1, 2),
        Box("spares", "Spare pool", f"{show('spare_nodes_p99')} at p99 · {show('mean_nodes_in_repair')} in repair on average",
            0, 3, "accent"),
        Box("nodes", "Nodes", f"{show('nodes_per_pod')} per pod · {show('nodes_built')} in all · {show('node_W')} each · "
            f"{show('rack_kW')} a rack", 1, 3),
        Box("storage", "Checkpoint storage", f"{show('storage_servers')} · {show('burst_write_GBps')} burst write",
            2, 3, "accent"),
    ]
    arrows = [
        Arrow("nodes", "leaf", f"one 400G NIC per GPU: {show('gpus_built')}"),
        Arrow("leaf", "spine", "to every spine of the pod"),
        Arrow("spine", "core", f"taper {p.core_taper:g}:1"),
        Arrow("core", "pods", ""),
        Arrow("nodes", "storage", f"front-end Ethernet · {show('frontend_node_GBps')} a node", dashed=True),
        Arrow("spares", "nodes", "swap in", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="One pod of the fabric, with this scenario's counts", height=720)


@page.chart("switches_vs_gpus")
def switches_vs_gpus(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "gpus",
        {"total_switches": "Switches at this taper", "total_switches_nonblocking": "Switches, non-blocking core",
         "leaf_switches": "Leaf switches"},
        title="Fabric switches against the GPUs the job needs (whole pods make steps)", y_title="Switches",
        line_shape="hv", n=240, log_x=False, hi=min(100_000, max(40_000, 2 * ctx.params.gpus)),
    )


@page.chart("spares_vs_repair")
def spares_vs_repair(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "repair_hours",
        {"spare_nodes_p99": "Spares at p99", "mean_nodes_in_repair": "Mean nodes in repair",
         "nodes_from_rounding": "Free nodes from whole pods"},
        title="Spare nodes against the mean repair time (log-log)", y_title="Nodes", line_shape="linear", n=120,
        log_y=True,
    )


page.render()
