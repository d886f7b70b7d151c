"""Screens: the main screen (the controller) and the modal screens it pushes."""
