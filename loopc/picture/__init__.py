"""Pictures of a network's loops: text, JSON, Graphviz dot, SVG and HTML (pure Python)."""
