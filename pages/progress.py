from ui.progress_page import render

render()
