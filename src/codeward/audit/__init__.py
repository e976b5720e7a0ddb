"""Who did what: users behind bearer tokens, and an audit record of every call, approval and denial."""
