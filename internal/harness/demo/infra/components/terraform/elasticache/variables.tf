variable "name" {
  description = "Cluster name; unique per instance."
  type        = string
}

variable "node_type" {
  description = "Cache node type."
  type        = string
  default     = "cache.t4g.small"
}

variable "latency_seconds" {
  description = "How long creating the cluster takes: simulated cloud latency."
  type        = number
  default     = 1
}
