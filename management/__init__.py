"""Management: the operator CLI (`tobe admin …`) and the Management service it calls."""
