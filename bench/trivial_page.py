"""The yardsticks for bench/browser.py, served by the same Python as the app.

With no query parameters: one slider, one metric. Streamlit's own floor for a slider move on this
machine; a question page's times are reported as a ratio to it.

With `?widgets=W&forms=F&markdown=M&chars=C&charts=K` (bench/browser.py --floor counts them on each
question page): the same slider and metric, drawn first as the question pages draw their cards,
above a page of that size whose other elements do not change on a move (W knobs, F answer
forms of a box and two buttons, M Markdown blocks of C characters in all, K three-line charts).
Its time is what Streamlit costs to rerun and redraw a page that big when only the number changes:
the bound under any question page of that size, whatever its own work."""

import math

import streamlit as st

value = st.session_state.get("trivial-value", 50)
card = st.empty()
card.metric("Double", value * 2)
st.slider("Value", 0, 100, 50, key="trivial-value")

q = st.query_params
widgets, forms, blocks, chars, charts = (int(q.get(k, 0)) for k in ("widgets", "forms", "markdown", "chars", "charts"))
for i in range(widgets):
    st.slider(f"Knob {i}", 0, 100, 10, key=f"floor-knob-{i}", help="A knob that this move leaves alone.")
sentence = "A paragraph of the page's prose, with **bold**, `code` and a number like 1,234 in it. "
text = (sentence * (chars // max(1, blocks) // len(sentence) + 1))[: chars // max(1, blocks)]
figure = {"data": [{"type": "scatter", "mode": "lines", "name": f"line {k}", "x": list(range(60)),
                    "y": [math.sin(x / 9 + k) * (k + 1) for x in range(60)]} for k in range(3)],
          "layout": {"height": 360, "hovermode": "x unified", "legend": {"orientation": "h"}}}
for i in range(max(blocks, forms, charts)):
    if i < forms:
        with st.container(border=True):
            st.markdown("**Try first.** A drill's question.")
            with st.form(key=f"floor-form-{i}", border=False):
                st.text_input("Your answer", key=f"floor-answer-{i}")
                st.form_submit_button("Check")
                st.form_submit_button("Reveal", type="tertiary")
    if i < blocks:
        st.markdown(text)
    if i < charts:
        st.plotly_chart(figure, key=f"floor-chart-{i}")
