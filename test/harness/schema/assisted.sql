-- The assisted-service tables kubectl-assisted moves, as the project's own DDL.
--
-- Written from the service's models (openshift/assisted-service, master):
-- go-swagger generates models/*.go from swagger.yaml with fields in
-- alphabetical order; gorm (internal/common/db.go, AutoMigrate in
-- internal/migrations) names each column after its field in snake_case, makes
-- string text, int64 bigint, bool boolean, strfmt.DateTime timestamptz, and
-- honours the gorm:"type:..." / "primaryKey" / "index" tags. Columns added by
-- later migrations come after the model's own.
--
-- This is not a pg_dump: no session settings, no owners. The tests load it into
-- a fresh database whenever ../shared/fixtures/assisted-schema.sql (a pg_dump of
-- the real service's database) is absent, and TestAssistedSchema_MatchesReal
-- compares the two (tables, columns, types, NOT NULL, defaults, checks,
-- primary keys, indexes, storage options) whenever it is present.
-- gormigrate (github.com/go-gormigrate/gormigrate) as internal/migrations/migrations.go runs it: one id column
CREATE TABLE migrations (
    id character varying(255) NOT NULL,
    PRIMARY KEY (id)
);

-- models/release_image.go (stored by internal/versions)
CREATE TABLE release_images (
    cpu_architecture text DEFAULT 'x86_64'::text,
    cpu_architectures text[],
    "default" boolean,
    openshift_version text,
    support_level text,
    url text NOT NULL,
    version text,
    PRIMARY KEY (url)
);

-- models/cluster.go (models.Cluster, go-swagger: fields in alphabetical order, gorm snake_case names; embedded Progress/DiskEncryption/Platform/IgnitionEndpoint are prefixed), then the columns internal/common/db.go adds in common.Cluster (pull_secret, proxy_hash, ...) and later migrations (internal/migrations/)
CREATE TABLE clusters (
    additional_ntp_source text,
    ams_subscription_id text,
    api_vip_dns_name text,
    base_dns_domain text,
    cluster_network_cidr text,
    cluster_network_host_prefix bigint,
    connectivity_majority_groups text,
    control_plane_count bigint,
    controller_logs_collected_at timestamp with time zone,
    controller_logs_started_at timestamp with time zone,
    cpu_architecture text,
    created_at timestamp with time zone,
    deleted_at timestamp with time zone,
    disk_encryption_enable_on text,
    disk_encryption_mode text,
    disk_encryption_tang_servers text,
    email_domain text,
    feature_usage text,
    high_availability_mode text,
    href text,
    http_proxy text,
    https_proxy text,
    hyperthreading text,
    id text NOT NULL,
    ignition_endpoint_ca_certificate text,
    ignition_endpoint_url text,
    ignored_cluster_validations text,
    ignored_host_validations text,
    image_created_at timestamp with time zone,
    image_download_url text,
    image_expires_at timestamp with time zone,
    image_generator_version text,
    image_size_bytes bigint,
    image_ssh_public_key text,
    image_static_network_config text,
    image_type text,
    imported boolean,
    install_completed_at timestamp with time zone,
    install_config_overrides text,
    install_started_at timestamp with time zone,
    ip_collisions text,
    kind text,
    last_installation_preparation_reason text,
    last_installation_preparation_status text,
    load_balancer_type text DEFAULT 'cluster-managed'::text NOT NULL,
    logs_info character varying(2048),
    machine_network_cidr text,
    name text,
    network_type text,
    no_proxy text,
    ntp_sources text,
    ocp_release_image text,
    openshift_cluster_id text,
    openshift_version text,
    org_id text,
    org_soft_timeouts_enabled boolean,
    platform_external_cloud_controller_manager text,
    platform_external_platform_name text,
    platform_type text,
    progress_finalizing_stage text,
    progress_finalizing_stage_percentage bigint,
    progress_finalizing_stage_started_at timestamp with time zone,
    progress_finalizing_stage_timed_out boolean,
    progress_installing_stage_percentage bigint,
    progress_preparing_for_installation_stage_percentage bigint,
    progress_total_percentage bigint,
    pull_secret_set boolean,
    schedulable_masters boolean,
    schedulable_masters_forced_true boolean,
    service_network_cidr text,
    ssh_public_key text,
    status text,
    status_info character varying(2048),
    status_updated_at timestamp with time zone,
    tags text,
    updated_at timestamp with time zone,
    user_managed_networking boolean,
    user_name text,
    validations_info text,
    vip_dhcp_allocation boolean,
    pull_secret text,
    proxy_hash text,
    machine_network_cidr_updated_at timestamp with time zone,
    api_vip_lease text,
    ingress_vip_lease text,
    kube_key_name text,
    kube_key_namespace text,
    is_ams_subscription_console_url_set boolean,
    image_generated boolean,
    trigger_monitor_timestamp timestamp with time zone,
    static_network_configured boolean,
    uploaded boolean,
    ui_settings text,
    mirror_registry_configuration text,
    primary_ip_stack bigint,
    PRIMARY KEY (id),
    CONSTRAINT chk_clusters_load_balancer_type CHECK ((load_balancer_type = ANY (ARRAY['cluster-managed'::text, 'user-managed'::text])))
);
CREATE INDEX idx_clusters_deleted_at ON clusters (deleted_at);

-- models/infra_env.go (models.InfraEnv; Proxy prefixed proxy_), then internal/common/db.go common.InfraEnv and later migrations
CREATE TABLE infra_envs (
    additional_ntp_sources text,
    additional_trust_bundle text,
    cluster_id text,
    cpu_architecture text,
    created_at timestamp with time zone,
    download_url text,
    email_domain text,
    expires_at timestamp with time zone,
    generator_version text,
    href text,
    id text NOT NULL,
    ignition_config_override text,
    kernel_arguments text,
    kind text,
    name text,
    network_discovery_delay_seconds bigint,
    ntp_sources text,
    openshift_version text,
    org_id text,
    proxy_http_proxy text,
    proxy_https_proxy text,
    proxy_no_proxy text,
    pull_secret_set boolean,
    rendezvous_ip text,
    size_bytes bigint,
    ssh_authorized_key text,
    static_network_config text,
    type text,
    updated_at timestamp with time zone,
    user_name text,
    pull_secret text,
    kube_key_namespace text,
    proxy_hash text,
    generated boolean,
    generated_at timestamp with time zone,
    image_expires_at timestamp with time zone,
    image_token_key text,
    internal_ignition_config_override text,
    mirror_registry_configuration text,
    PRIMARY KEY (id)
);
CREATE INDEX idx_infra_envs_cluster_id ON infra_envs (cluster_id);

-- models/host.go (models.Host; Progress prefixed progress_), then internal/common/db.go common.Host and later migrations
CREATE TABLE hosts (
    api_vip_connectivity text,
    bootstrap boolean,
    checked_in_at timestamp with time zone,
    cluster_id text,
    connection_timed_out boolean,
    connectivity text,
    created_at timestamp with time zone,
    deleted_at timestamp with time zone,
    discovery_agent_version text,
    disks_info text,
    disks_to_be_formatted text,
    domain_name_resolutions text,
    fencing_credentials text,
    free_addresses text,
    href text,
    id text NOT NULL,
    ignition_config_overrides text,
    ignition_endpoint_token_set boolean,
    images_status text,
    infra_env_id text NOT NULL,
    installation_disk_id text,
    installation_disk_path text,
    installer_args text,
    installer_version text,
    inventory text,
    kind text,
    logs_collected_at timestamp with time zone,
    logs_info character varying(2048),
    logs_started_at timestamp with time zone,
    machine_config_pool_name text,
    media_status text,
    node_labels text,
    ntp_sources text,
    progress_current_stage text,
    progress_installation_percentage bigint,
    progress_progress_info character varying(2048),
    progress_stage_started_at timestamp with time zone,
    progress_stage_timed_out boolean,
    progress_stage_updated_at timestamp with time zone,
    registered_at timestamp with time zone,
    requested_hostname text,
    role text,
    skip_formatting_disks text,
    stage_started_at timestamp with time zone,
    stage_updated_at timestamp with time zone,
    status text,
    status_info character varying(2048),
    status_updated_at timestamp with time zone,
    suggested_role text,
    tang_connectivity text,
    "timestamp" bigint,
    updated_at timestamp with time zone,
    user_name text,
    validations_info text,
    approved boolean,
    kube_key_namespace text,
    trigger_monitor_timestamp timestamp with time zone,
    ignition_endpoint_token text,
    ignition_endpoint_http_headers text,
    PRIMARY KEY (id, infra_env_id)
);
CREATE INDEX hosts_by_cluster_id ON hosts (cluster_id);
CREATE INDEX hosts_by_infra_env_id ON hosts (infra_env_id);
CREATE INDEX idx_hosts_deleted_at ON hosts (deleted_at);

-- models/cluster_network.go
CREATE TABLE cluster_networks (
    cidr cidr NOT NULL,
    cluster_id text NOT NULL,
    host_prefix bigint,
    PRIMARY KEY (cidr, cluster_id)
);

-- models/service_network.go
CREATE TABLE service_networks (
    cidr cidr NOT NULL,
    cluster_id text NOT NULL,
    PRIMARY KEY (cidr, cluster_id)
);

-- models/machine_network.go
CREATE TABLE machine_networks (
    cidr cidr NOT NULL,
    cluster_id text NOT NULL,
    PRIMARY KEY (cidr, cluster_id)
);

-- models/api_vip.go
CREATE TABLE api_vips (
    cluster_id text NOT NULL,
    ip inet NOT NULL,
    verification text,
    PRIMARY KEY (cluster_id, ip)
);

-- models/ingress_vip.go
CREATE TABLE ingress_vips (
    cluster_id text NOT NULL,
    ip inet NOT NULL,
    verification text,
    PRIMARY KEY (cluster_id, ip)
);

-- models/monitored_operator.go
CREATE TABLE monitored_operators (
    bundles text[],
    cluster_id text NOT NULL,
    dependency_only boolean,
    name text NOT NULL,
    namespace text,
    operator_type text,
    properties text,
    source_bundles text[],
    status text,
    status_info text,
    status_updated_at timestamp with time zone,
    subscription_name text,
    timeout_seconds bigint,
    version text,
    PRIMARY KEY (cluster_id, name)
);

-- models/event.go (models.Event) inside internal/common/db.go common.Event (gorm.Model: id, created_at, updated_at, deleted_at); autovacuum settings from internal/migrations (events table tuning)
CREATE TABLE events (
    id bigserial,
    created_at timestamp with time zone,
    updated_at timestamp with time zone,
    deleted_at timestamp with time zone,
    category text DEFAULT 'user'::text,
    cluster_id text,
    event_time timestamp with time zone,
    host_id text,
    infra_env_id text,
    message character varying(4096),
    name text,
    props text,
    request_id text,
    severity text,
    PRIMARY KEY (id)
) WITH (autovacuum_vacuum_scale_factor='0.05', autovacuum_analyze_scale_factor='0.025');
CREATE INDEX idx_events_cluster_id ON events (cluster_id);
CREATE INDEX idx_events_deleted_at ON events (deleted_at);
CREATE INDEX idx_events_host_id ON events (host_id);
CREATE INDEX idx_events_infra_env_id ON events (infra_env_id);

