"""The Textual front end. The only package of yeetui that imports Textual."""
