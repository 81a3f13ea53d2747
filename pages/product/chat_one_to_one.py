import streamlit as st

from models.product import chat_one_to_one as model
from ui.event_stepper import event_stepper, step_key
from ui.question_page import QuestionPage

SLUG = "chat-one-to-one"
ORDER_KEY = f"{SLUG}.sim_order"
CRASH_KEY = f"{SLUG}.sim_crash"
ONLINE_KEY = f"{SLUG}.sim_online"

page = QuestionPage(SLUG)

ORDER_LABELS = {
    "inbox_first": "Inbox, ack, publish (the design)",
    "publish_first": "Publish, ack, inbox (the bug)",
}
CRASH_CHOICES = (-1, 0, 1, 2)  # -1: no crash


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


def _restart() -> None:
    st.session_state[step_key(SLUG)] = 0


def _crash_label(order: str):
    ops = model.ORDERS[order]

    def label(c):
        if c < 0:
            return "No crash"
        if c == 0:
            return "Crash before anything"
        done = " and ".join(model.OP_SHORT[o] for o in ops[:c])
        return f"Crash after: {done}"

    return label


@page.sim("delivery")
def delivery(ctx):
    st.markdown("##### Step through one message to Bob")
    c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
    order = c1.radio("Server's order of operations", list(ORDER_LABELS), format_func=ORDER_LABELS.get,
                     key=ORDER_KEY, on_change=_restart)
    crash = c2.selectbox("Server crash", CRASH_CHOICES, format_func=_crash_label(order), key=CRASH_KEY,
                         on_change=_restart,
                         help="The server dies after this many of its three operations; a new one takes over.")
    online = c3.toggle("Bob online", key=ONLINE_KEY, on_change=_restart)
    frames, outcome = model.deliver(order, None if crash < 0 else crash, online)
    n = len(frames)
    i = event_stepper(SLUG, n, next_label="Next")

    f = frames[i]
    text = f"**{f.actor}: `{f.event}`.** {f.message}"
    last = i == n - 1
    if f.event == "crash" or f.live == "lost" or (last and outcome.lost):
        st.error(text, icon=":material/error:")
    elif last:
        st.success(text, icon=":material/done_all:")
    else:
        st.info(text, icon=":material/swap_horiz:")
    m = st.columns(4)
    m[0].metric("Alice's screen", f.alice_sees, border=True)
    m[1].metric("Bob's inbox rows", ", ".join(f.inbox) or "empty", border=True)
    m[2].metric("Bob's phone shows", ", ".join(f.bob_has) or "nothing", border=True)
    m[3].metric("Bob connected", "yes" if f.bob_online else "no", border=True)
    st.dataframe(
        {"#": [x.index for x in frames[: i + 1]], "Who": [x.actor for x in frames[: i + 1]],
         "Event": [x.event for x in frames[: i + 1]], "Live path": [x.live or "" for x in frames[: i + 1]],
         "Inbox": [", ".join(x.inbox) for x in frames[: i + 1]],
         "Alice sees": [x.alice_sees for x in frames[: i + 1]]},
        hide_index=True, width="stretch", key=f"{SLUG}.sim.log",
    )
    if last:
        verdict = ("lost: Alice was told 'sent' and Bob never receives it" if outcome.lost
                   else "delivered" + ("" if outcome.durable else ", but never written durably"))
        copies = (f" Bob's client received {outcome.copies_received} cop"
                  f"{'y' if outcome.copies_received == 1 else 'ies'} and shows one." if outcome.delivered else "")
        ending = f"This run ends {verdict}.{copies} "
    else:
        ending = "Step to the end to see how this run ends. "
    st.caption(
        ending + "Every combination of order, crash point and Bob's connection is checked in the model's tests: "
        "with the inbox written first, no acknowledged message is ever lost."
    )


page.render()
