"""arc-hooks: the actions-runner-controller legacy API as stateless Metacontroller hooks."""
