terraform {
  required_providers {
    tfitest = {
      source = "registry.tfisolate.test/tfisolate/tfitest"
    }
  }
}

variable "name" {
  type = string
}

variable "node_type" {
  type = string
}

variable "latency_seconds" {
  type = number
}

resource "tfitest_item" "cluster" {
  name    = var.name
  payload = jsonencode({ node_type = var.node_type })
}

# Creating a real cluster takes a while; the provisioner stands in for that
# latency so parallel speed-ups show offline. It runs on create only.
resource "terraform_data" "provisioning" {
  input = tfitest_item.cluster.id

  provisioner "local-exec" {
    command = "sleep ${var.latency_seconds}"
  }
}

output "id" {
  value = tfitest_item.cluster.id
}
