# An item of the test provider (SHORT address) and a terraform_data whose
# provisioner, when var.gate names a gate directory, announces itself on
# the gate's "started" fifo and then waits on its "release" fifo. It is
# replaced on every apply, so every apply reaches the gate.
terraform {
  required_providers {
    tfitest = {
      source = "tfisolate/tfitest"
    }
  }
}

variable "gate" {
  type    = string
  default = ""
}

resource "tfitest_item" "this" {
  name = "gated"
}

resource "terraform_data" "slow" {
  triggers_replace = timestamp()
  depends_on       = [tfitest_item.this]

  provisioner "local-exec" {
    command = var.gate == "" ? "true" : "echo started > ${var.gate}/started; exec cat ${var.gate}/release"
  }
}

output "id" {
  value = tfitest_item.this.id
}
