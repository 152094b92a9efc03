"""LLM providers behind one Reply shape."""
