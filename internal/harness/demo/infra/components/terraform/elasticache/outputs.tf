output "cluster_id" {
  value = module.redis.id
}
