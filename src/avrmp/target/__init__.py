"""Target models: per target, one instruction table, its parts and its calling convention."""
