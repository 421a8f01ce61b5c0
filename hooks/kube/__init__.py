"""Kubernetes API access for the parts that write objects themselves (the webhook receiver).

Hooks never talk to the API server: Metacontroller does that for them. Only the webhook
receiver reads HRAs and their scale targets and writes capacity reservations, through the
`KubePort` protocol: `kr8s_adapter` for a real cluster, `arc_sim.kube_port` for the
simulated world.
"""
