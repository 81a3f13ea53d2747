from ui.reference_page import render

render()
