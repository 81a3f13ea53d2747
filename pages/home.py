from ui.home import render

render()
