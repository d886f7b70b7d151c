"""What the user set: the config's layers and their validation, and the trust given to a
project (with the content it pins)."""
