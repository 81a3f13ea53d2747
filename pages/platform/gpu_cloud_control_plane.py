import streamlit as st

from models.platform import gpu_cloud_control_plane as model
from ui.diagram import Arrow, Box, box_diagram
from ui.event_stepper import event_stepper
from ui.question_page import QuestionPage

SLUG = "gpu-cloud-control-plane"
page = QuestionPage(SLUG)
GATE_KEY = f"{SLUG}.sim_skip_gate"


page.sweep("bad_node_vs_allocation", "allocation_nodes",
    {"p_allocation_has_bad_node": "No gate", "p_allocation_has_bad_node_gated": "Behind the health gate"},
    title="Chance an allocation holds at least one bad node, against its size (log x)",
    y_title="% of allocations", n=80)

page.sweep("api_load_vs_nodes", "nodes",
    {"api_qps": "Reconciles reading through the API", "heartbeat_writes_per_s": "Heartbeat writes",
     "api_qps_with_cache": "Reconciles with a watch cache"},
    title="Control-plane load against the fleet size (log-log)", y_title="Calls or writes per second",
    log_y=True, n=60)


# --- the step-through ---------------------------------------------------------------------------

LAYOUT = {
    "PROVISIONING": (0, 0), "BURN_IN": (1, 0), "READY": (2, 0), "ALLOCATED": (3, 0),
    "RMA": (0, 1), "REPAIR": (1, 1), "DRAINING": (3, 1),
}
EDGES = [
    ("PROVISIONING", "BURN_IN", "imaged"), ("BURN_IN", "READY", "burn_in ✓"),
    ("READY", "ALLOCATED", "allocate"), ("READY", "REPAIR", "check ✗"), ("ALLOCATED", "DRAINING", "release · fault"),
    ("DRAINING", "READY", "drained ✓"), ("DRAINING", "REPAIR", "drained ✗"),
    ("REPAIR", "RMA", "rma"), ("RMA", "PROVISIONING", "replaced"),
]
# BURN_IN and REPAIR are joined both ways; two parallel arrows keep the labels apart.
PARALLEL = (("BURN_IN", "REPAIR", "burn_in ✗", -0.09), ("REPAIR", "BURN_IN", "repair", 0.09))


def _state_figure(frame: model.Frame):
    fleet = frame.fleet
    acted = fleet.node(frame.node) if frame.node else None
    boxes = []
    for state, (col, row) in LAYOUT.items():
        members = [n.name + (f" ({n.tenant})" if n.tenant else "") for n in fleet.nodes if n.state == state]
        tone = "default"
        if acted is not None and acted.state == state:
            tone = "danger" if not frame.accepted else "accent"
        boxes.append(Box(state, state, " · ".join(members) if members else "—", col, row, tone))
    arrows = [Arrow(a, b, label) for a, b, label in EDGES]
    arrows += [Arrow(a, b, label, offset=dx) for a, b, label, dx in PARALLEL]
    return box_diagram(boxes, arrows, title="Where every node is now (highlighted: the node this event touched)")


@page.sim("node_lifecycle")
def node_lifecycle(ctx):
    st.markdown("##### Step through six nodes and two tenants, one event at a time")
    skip = st.toggle("Skip the pre-handoff health check", key=GATE_KEY,
                     help="Allocate straight from READY, as a design without a health gate would.")
    frames = model.scenario(gate=not skip)
    n = len(frames)
    i = event_stepper(SLUG, n)

    frame = frames[i]
    fleet = frame.fleet
    if frame.event == "fault":
        head = f"**{frame.node}: a fault appears.** "
    elif frame.node:
        head = f"`{frame.event}`" + (f" for {frame.tenant}" if frame.tenant else "") + " · "
    else:
        head = ""
    text = head + frame.message + (f" {frame.note}" if frame.note else "")
    if not frame.accepted:
        st.warning("Refused. " + text, icon=":material/block:")
    elif frame.event == "fault":
        st.error(text, icon=":material/warning:")
    else:
        st.info(text, icon=":material/swap_horiz:")
    m = st.columns(4)
    m[0].metric("READY", fleet.count("READY"), border=True)
    m[1].metric("ALLOCATED", fleet.count("ALLOCATED"), border=True)
    m[2].metric("REPAIR + RMA", fleet.count("REPAIR") + fleet.count("RMA"), border=True)
    m[3].metric("Bad nodes handed out", frame.bad_handed, border=True,
                help="Allocations so far that gave a tenant a node with a fault on it.")
    st.plotly_chart(_state_figure(frame), key=f"{SLUG}.sim.states", config={"displaylogo": False})
    fault_text = {"": "none", "detectable": "yes (a check can see it)", "silent": "yes (silent: checks miss it)"}
    # A phone scrolls each table sideways; its first column stays in view.
    st.dataframe(
        {"Node": [x.name for x in fleet.nodes], "State": [x.state for x in fleet.nodes],
         "Tenant": [x.tenant or "—" for x in fleet.nodes],
         "Fault (hidden truth)": [fault_text[x.fault] for x in fleet.nodes],
         "Checked since READY": ["yes" if x.checked else "no" for x in fleet.nodes],
         "Field repairs": [x.repairs for x in fleet.nodes]},
        hide_index=True, width="stretch", key=f"{SLUG}.sim.nodes",
        column_config={"Node": st.column_config.Column(pinned=True)},
    )
    final = frames[-1].bad_handed
    st.caption(
        f"This run hands tenants {final} faulty node{'s' if final != 1 else ''} in total "
        + ("(no check before the handoff: both faults reach acme). " if skip
           else "(the check pulls the flapping link; the slow GPU is silent and gets through). ")
        + "The same rule holds at every step: a node reaches a tenant only from READY, and never two tenants at once."
    )
    with st.expander("The transition table (pure data in models/platform/gpu_cloud_control_plane.py)"):
        st.dataframe(
            {"From": [t.src for t in model.TRANSITIONS], "Event": [t.event for t in model.TRANSITIONS],
             "Guard": [model.GUARD_TEXT.get(t.guard, "—") for t in model.TRANSITIONS],
             "To": [t.dst for t in model.TRANSITIONS], "Why": [t.why for t in model.TRANSITIONS]},
            hide_index=True, width="stretch", key=f"{SLUG}.sim.table",
            column_config={"From": st.column_config.Column(pinned=True)},
        )


page.render()
