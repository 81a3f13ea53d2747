"""What a learner's screen must never do, as checks run in the page (shared by the layout tests
and `python -m bench.layout`).

- CUT_TEXT lists every metric value or label whose text is wider than its box (the ellipsis a
  learner sees as "90.5% / 99.…"), with the box's text.
- FIRST_KNOB gives the first knob's box (a slider, select slider, select box or toggle of the
  scenario panel), so a test can say whether it is inside the first viewport.
"""

from __future__ import annotations

CUT_TEXT = """
() => {
  const cut = [];
  const boxes = document.querySelectorAll(
    "[data-testid='stMetricValue'], [data-testid='stMetricValue'] *, [data-testid='stMetricLabel'], " +
    "[data-testid='stMetricLabel'] *");
  for (const el of boxes) {
    if (el.clientWidth === 0) continue;                 // not laid out (a closed expander)
    if (el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent.trim().slice(0, 60));
  }
  return [...new Set(cut)];
}
"""

FIRST_KNOB = """
() => {
  const panel = document.querySelector(".st-key-scenario, .st-key-scenario-inline") || document;
  const knob = panel.querySelector(
    "[data-testid='stSlider'], [data-testid='stSelectSlider'], [data-testid='stSelectbox'], " +
    "[data-testid='stCheckbox'], [data-testid='stToggle']");
  if (!knob) return null;
  // the preset chooser is a select box too: the first knob is the first widget after it
  const widgets = [...panel.querySelectorAll(
    "[data-testid='stSlider'], [data-testid='stSelectSlider'], [data-testid='stSelectbox'], " +
    "[data-testid='stCheckbox'], [data-testid='stToggle']")];
  const first = widgets.find(w => !/Preset/.test(w.textContent)) || knob;
  const r = first.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
          width: window.innerWidth, height: window.innerHeight, label: first.textContent.trim().slice(0, 60)};
}
"""

# After scrolling a slider into the middle of the screen: the metric cards and the slider are
# both inside the viewport (on a phone the cards stick to the top while the panel is in view).
KNOB_AND_METRIC_TOGETHER = """
() => {
  const sliders = document.querySelectorAll(".st-key-scenario [data-testid='stSlider']");
  const slider = sliders[Math.min(2, sliders.length - 1)];
  if (!slider) return null;
  slider.scrollIntoView({block: "center"});
  return new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() => {
    const s = slider.getBoundingClientRect();
    const metric = document.querySelector("[data-testid='stMetric']").getBoundingClientRect();
    const inside = r => r.top >= 0 && r.bottom <= window.innerHeight;
    resolve({slider_visible: inside(s), metric_visible: inside(metric),
             overlap: metric.bottom > s.top && metric.top < s.bottom});
  })));
}
"""
