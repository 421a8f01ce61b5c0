"""The runner-pod DecoratorController: the safety net that removes the GitHub registration of
a runner pod deleted by anyone (a drain, an eviction, the cluster autoscaler, `kubectl delete`)."""
