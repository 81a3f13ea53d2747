"""The figures of one simulation's run, one module per simulation (models/sim/), as plain dicts
(ui/figures.py): a page that runs the simulation declares them in its panel (ui/declared_panel.py)."""
