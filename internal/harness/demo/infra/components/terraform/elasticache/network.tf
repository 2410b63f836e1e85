# Where the cluster is placed: nowhere in particular by default (no
# subnet group, no outputs: terraform keeps no null output), or in the VPC
# a stack's vpc instance made, when the run generates these variables from
# that instance's outputs (see examples/dag).

variable "vpc_id" {
  description = "The VPC the cluster is placed in; null: none."
  type        = string
  default     = null
}

variable "subnet_ids" {
  description = "Subnets of the cluster's subnet group, in vpc_id."
  type        = list(string)
  default     = null
}

resource "tfitest_item" "subnet_group" {
  count = var.vpc_id == null ? 0 : 1

  name    = "${var.name}-subnets"
  payload = jsonencode({ vpc_id = var.vpc_id, subnet_ids = var.subnet_ids })
}

output "vpc_id" {
  value = var.vpc_id
}

output "subnet_ids" {
  value = var.subnet_ids
}
