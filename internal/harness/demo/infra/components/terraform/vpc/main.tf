# The vpc component: the network other components of a stack are placed
# in. Its outputs exist only once it is applied; a run hands them to the
# units that depend on it (see examples/dag), which get them in a
# generated tfvars file.
terraform {
  required_version = ">= 1.5"

  required_providers {
    tfitest = {
      source  = "registry.tfisolate.test/tfisolate/tfitest"
      version = "~> 1.0"
    }
  }
}

variable "name" {
  description = "VPC name; unique per instance."
  type        = string
}

variable "cidr_block" {
  description = "The VPC's address range; each subnet gets a /24 of it."
  type        = string
  default     = "10.0.0.0/16"
}

variable "availability_zones" {
  description = "One subnet per zone."
  type        = list(string)
  default     = ["us-east-2a", "us-east-2b"]
}

variable "latency_seconds" {
  description = "How long creating the VPC takes: simulated cloud latency."
  type        = number
  default     = 1
}

resource "tfitest_item" "vpc" {
  name    = var.name
  payload = jsonencode({ cidr_block = var.cidr_block })
}

resource "tfitest_item" "subnet" {
  count = length(var.availability_zones)

  name = "${var.name}-${var.availability_zones[count.index]}"
  payload = jsonencode({
    vpc_id            = tfitest_item.vpc.id
    availability_zone = var.availability_zones[count.index]
    cidr_block        = cidrsubnet(var.cidr_block, 8, count.index)
  })
}

# Creating a real VPC takes a while; see modules/redis-cluster.
resource "terraform_data" "provisioning" {
  input = tfitest_item.vpc.id

  provisioner "local-exec" {
    command = "sleep ${var.latency_seconds}"
  }
}

output "vpc_id" {
  value = tfitest_item.vpc.id
}

output "subnet_ids" {
  value = tfitest_item.subnet[*].id
}
