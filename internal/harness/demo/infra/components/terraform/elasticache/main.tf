# The elasticache component: one Redis cluster per instance. Stacks run many
# instances of it (metadata.component: elasticache) side by side. The
# backend comes from a generated backend.tf.json, as wrappers such as atmos
# write it.
terraform {
  required_version = ">= 1.5"

  required_providers {
    tfitest = {
      source  = "registry.tfisolate.test/tfisolate/tfitest"
      version = "~> 1.0"
    }
  }
}

module "redis" {
  source = "../../../modules/redis-cluster"

  name            = var.name
  node_type       = var.node_type
  latency_seconds = var.latency_seconds
}
