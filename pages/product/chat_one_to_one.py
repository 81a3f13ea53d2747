import streamlit as st

from models.product import chat_one_to_one as model
from ui.event_stepper import event_stepper, step_key
from ui.question_page import QuestionPage

SLUG = "chat-one-to-one"
page = QuestionPage(SLUG)

page.sweep("presence_vs_interval", "heartbeat_interval_s",
    {"db_nodes_naive_presence": "DB nodes, last-seen written per heartbeat",
     "db_nodes_ttl_presence": "DB nodes, expiring key (transitions only)",
     "presence_shards": "Cache shards, expiring key"},
    title="What the heartbeat interval costs (log-log)", y_title="Nodes or shards", log_y=True,
    line_shape="hv", n=80)

page.sweep("partitions_vs_users", "daily_active_users",
    {"kafka_partitions": "Partitions (with headroom)", "consumers_needed": "Consumers the peak needs"},
    title="Partitions and consumers against daily users (log-log)", y_title="Count", log_y=True,
    line_shape="hv", n=80)

TONES = {"error": (st.error, ":material/error:"), "success": (st.success, ":material/done_all:"),
         "info": (st.info, ":material/swap_horiz:")}


def _restart() -> None:
    st.session_state[step_key(SLUG)] = 0


@page.sim("delivery")
def delivery(ctx):
    """A scripted replay stepped by event (page.simulation has no stepper); its words and figure are the model's."""
    st.markdown("##### Step through one message to Bob")
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    order = c1.radio("Server's order of operations", list(model.ORDER_LABELS), format_func=model.ORDER_LABELS.get,
                     key=f"{SLUG}.sim_order", on_change=_restart)
    crash = c2.selectbox("Server crash", model.CRASH_CHOICES, format_func=lambda c: model.crash_label(order, c),
                         key=f"{SLUG}.sim_crash", on_change=_restart,
                         help="The server dies after this many of its three operations; a new one takes over.")
    online = c3.toggle("Bob online", key=f"{SLUG}.sim_online", on_change=_restart)
    frames, outcome = model.deliver(order, None if crash < 0 else crash, online)
    i = event_stepper(SLUG, len(frames), next_label="Next")
    f, last = frames[i], i == len(frames) - 1
    show, icon = TONES[model.frame_tone(f, last, outcome)]
    show(f"**{f.actor}: `{f.event}`.** {f.message}", icon=icon)
    for col, (label, value) in zip(st.columns(4), model.frame_cards(f)):
        col.metric(label, value, border=True)
    st.dataframe(model.event_log(frames[: i + 1]), hide_index=True, width="stretch", key=f"{SLUG}.sim.log")
    ending = model.delivery_steps(ctx.params, outcome)["replay_ending"].value if last else \
        "Step to the end to see how this run ends."
    st.caption(ending + " Every combination of order, crash point and Bob's connection is checked in the model's "
               "tests: with the inbox written first, no acknowledged message is ever lost.")


page.render()
