resource "terraform_data" "legacy" {
  input = "adopted once"
}
