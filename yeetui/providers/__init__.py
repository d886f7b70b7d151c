"""Model providers: `anthropic/*` through the anthropic SDK, everything else through litellm (lazily)."""
