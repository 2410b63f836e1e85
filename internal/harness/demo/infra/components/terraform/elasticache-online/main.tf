# The elasticache component for machines that reach the public registry:
# the same shape as ../elasticache, with the cluster id drawn by the random
# provider instead of the offline test provider.
terraform {
  required_version = ">= 1.5"

  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.0"
    }
  }
}

variable "name" {
  type = string
}

variable "node_type" {
  type    = string
  default = "cache.t4g.small"
}

variable "latency_seconds" {
  type    = number
  default = 1
}

resource "random_id" "cluster" {
  prefix      = "${var.name}-"
  byte_length = 4
  keepers     = { node_type = var.node_type }
}

resource "terraform_data" "provisioning" {
  input = random_id.cluster.hex

  provisioner "local-exec" {
    command = "sleep ${var.latency_seconds}"
  }
}

output "cluster_id" {
  value = random_id.cluster.hex
}
