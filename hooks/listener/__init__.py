"""`arc-hooks listen`: the scale-set listener. For each RunnerDeployment or RunnerSet in
scale-set mode it holds the scale set's message session, acquires the jobs GitHub offers, and
writes how many jobs are assigned where the HorizontalRunnerAutoscaler hook reads it
(`hooks.scale_set_mode`).

`targets` finds what to listen to in the cluster's objects (pure), `worker` is one scale set's
listener (a step at a time, on an injected clock), `fleet` keeps one per target, `sink` writes
to Kubernetes, `metrics` records what GitHub's listener records, and `run` runs it all in a
process (the simulated world drives the same fleet on virtual time: `arc_sim/listeners.py`)."""
