from ui.mock_page import render

render()
