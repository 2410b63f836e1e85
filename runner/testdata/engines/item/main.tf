# One item of the test provider, named by its SHORT address: the engine
# resolves it on its own default registry host.
terraform {
  required_providers {
    tfitest = {
      source  = "tfisolate/tfitest"
      version = ">= 1.0.0"
    }
  }
}

variable "name" {
  type = string
}

resource "tfitest_item" "this" {
  name = var.name
}

resource "terraform_data" "meta" {
  input = var.name
}

output "id" {
  value = tfitest_item.this.id
}

output "meta" {
  value = terraform_data.meta.output
}

output "tags" {
  value = tomap({ name = var.name, kind = "item" })
}

output "size" {
  value = length(var.name)
}

output "secret" {
  value     = "secret-${var.name}"
  sensitive = true
}
