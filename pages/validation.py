from ui.validation_page import render

render()
