BEGIN TRANSACTION;
CREATE TABLE alembic_version (
	version_num VARCHAR(32) NOT NULL, 
	CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
INSERT INTO "alembic_version" VALUES('v3.2.0.a');
CREATE TABLE commtune_knob_values (
	platform VARCHAR(32) NOT NULL, 
	knob VARCHAR(128) NOT NULL, 
	value VARCHAR(256) NOT NULL, 
	ok BOOLEAN NOT NULL, 
	reason TEXT NOT NULL, 
	checked FLOAT NOT NULL, 
	PRIMARY KEY (platform, knob, value)
);
CREATE TABLE commtune_meta (
	"key" VARCHAR(64) NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_meta" VALUES('schema_version','4');
CREATE TABLE commtune_models (
	platform VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform)
);
CREATE TABLE commtune_platforms (
	"key" VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_platforms" VALUES('71bdf03684039d8d','{"cpu_model": "AMD EPYC", "cores": 2, "mpi_vendor": "openmpi", "mpi_version": "4.1.4", "mpi_device": "pml:cm,monitoring,ob1,ucx,v btl:ofi,openib,self,tcp,vader", "ranks_per_node": null}',1.7954717521098871231e+09);
CREATE TABLE commtune_profiles (
	study VARCHAR(512) NOT NULL, 
	trial INTEGER NOT NULL, 
	run INTEGER NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (study, trial, run)
);
CREATE TABLE commtune_samples (
	platform VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform)
);
CREATE TABLE commtune_training (
	platform VARCHAR(32) NOT NULL, 
	point VARCHAR(256) NOT NULL, 
	config VARCHAR(1024) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (platform, point, config)
);
CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
INSERT INTO "studies" VALUES(1,'s4');
CREATE TABLE study_directions (
	study_direction_id INTEGER NOT NULL, 
	direction VARCHAR(8) NOT NULL, 
	study_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	PRIMARY KEY (study_direction_id), 
	UNIQUE (study_id, objective), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "study_directions" VALUES(1,'MINIMIZE',1,0);
CREATE TABLE study_system_attributes (
	study_system_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_system_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
CREATE TABLE study_user_attributes (
	study_user_attribute_id INTEGER NOT NULL, 
	study_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (study_user_attribute_id), 
	UNIQUE (study_id, "key"), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "study_user_attributes" VALUES(1,1,'commtune','{"command": ["true"], "library": "openmpi", "space": [{"knob": "btl_vader_eager_limit", "values": [4096, 8192, 16384]}], "metric": "wall", "repeats": 3}');
INSERT INTO "study_user_attributes" VALUES(2,1,'platform','"71bdf03684039d8d"');
INSERT INTO "study_user_attributes" VALUES(3,1,'acceptance','{"trial": 1, "params": {"btl_vader_eager_limit": 16384}, "default_values": [0.0073145390001627675, 0.0039041730001372343, 0.003827197999726195, 0.004111792000003334, 0.004252676000305655], "best_values": [0.0039050740001584927, 0.0038696080000590882, 0.004063501000018732, 0.004054243999689788, 0.004166474000157905], "speedup": 1.0141945083517294, "ci": [0.9418474364122348, 1.8041684222070604], "p_value": 0.34523809523809523, "accepted": false, "measured_trials": 4, "reason": "not faster beyond noise"}');
CREATE TABLE trial_heartbeats (
	trial_heartbeat_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	heartbeat DATETIME NOT NULL, 
	PRIMARY KEY (trial_heartbeat_id), 
	UNIQUE (trial_id), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE trial_intermediate_values (
	trial_intermediate_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	step INTEGER NOT NULL, 
	intermediate_value FLOAT, 
	intermediate_value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_intermediate_value_id), 
	UNIQUE (trial_id, step), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
CREATE TABLE trial_params (
	param_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	param_name VARCHAR(512), 
	param_value FLOAT, 
	distribution_json TEXT, 
	PRIMARY KEY (param_id), 
	UNIQUE (trial_id, param_name), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_params" VALUES(1,2,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(2,3,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(3,4,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(4,5,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
CREATE TABLE trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_system_attributes" VALUES(1,4,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 14}"');
INSERT INTO "trial_system_attributes" VALUES(2,5,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 12}"');
CREATE TABLE trial_user_attributes (
	trial_user_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_user_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_user_attributes" VALUES(1,1,'role','"reference"');
INSERT INTO "trial_user_attributes" VALUES(2,1,'config','{}');
INSERT INTO "trial_user_attributes" VALUES(3,1,'runs','[{"value": 0.008018018000257143, "wall": 0.008018018000257143, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006392390000200976, "wall": 0.006392390000200976, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006392579000021215, "wall": 0.006392579000021215, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(4,2,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(5,2,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(6,3,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(7,3,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(8,2,'runs','[{"value": 0.007816900999841891, "wall": 0.007816900999841891, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004510890999881667, "wall": 0.004510890999881667, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004485202000068966, "wall": 0.004485202000068966, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(9,3,'runs','[{"value": 0.006523825999920518, "wall": 0.006523825999920518, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006455116999859456, "wall": 0.006455116999859456, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006432124000184558, "wall": 0.006432124000184558, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(10,4,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(11,4,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(12,4,'duplicate_of','1');
INSERT INTO "trial_user_attributes" VALUES(13,5,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(14,5,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(15,5,'runs','[{"value": 0.007681747999868094, "wall": 0.007681747999868094, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006481356000222149, "wall": 0.006481356000222149, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.0064878880002652295, "wall": 0.0064878880002652295, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
CREATE TABLE trial_values (
	trial_value_id INTEGER NOT NULL, 
	trial_id INTEGER NOT NULL, 
	objective INTEGER NOT NULL, 
	value FLOAT, 
	value_type VARCHAR(7) NOT NULL, 
	PRIMARY KEY (trial_value_id), 
	UNIQUE (trial_id, objective), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_values" VALUES(1,1,0,6.39257900002121459692e-03,'FINITE');
INSERT INTO "trial_values" VALUES(2,2,0,4.51089099988166708499e-03,'FINITE');
INSERT INTO "trial_values" VALUES(3,3,0,6.4551169998594559729e-03,'FINITE');
INSERT INTO "trial_values" VALUES(4,4,0,4.51089099988166708499e-03,'FINITE');
INSERT INTO "trial_values" VALUES(5,5,0,6.48788800026522949337e-03,'FINITE');
CREATE TABLE trials (
	trial_id INTEGER NOT NULL, 
	number INTEGER, 
	study_id INTEGER, 
	state VARCHAR(8) NOT NULL, 
	datetime_start DATETIME, 
	datetime_complete DATETIME, 
	PRIMARY KEY (trial_id), 
	FOREIGN KEY(study_id) REFERENCES studies (study_id)
);
INSERT INTO "trials" VALUES(1,0,1,'COMPLETE','2026-11-23 22:09:17.335796','2026-11-23 22:09:17.412489');
INSERT INTO "trials" VALUES(2,1,1,'COMPLETE','2026-11-23 22:09:17.431128','2026-11-23 22:09:17.549929');
INSERT INTO "trials" VALUES(3,2,1,'COMPLETE','2026-11-23 22:09:17.457770','2026-11-23 22:09:17.556620');
INSERT INTO "trials" VALUES(4,3,1,'COMPLETE','2026-11-23 22:09:17.565889','2026-11-23 22:09:17.590641');
INSERT INTO "trials" VALUES(5,4,1,'COMPLETE','2026-11-23 22:09:17.597864','2026-11-23 22:09:17.659414');
CREATE TABLE version_info (
	version_info_id INTEGER NOT NULL, 
	schema_version INTEGER, 
	library_version VARCHAR(256), 
	PRIMARY KEY (version_info_id), 
	CHECK (version_info_id=1)
);
INSERT INTO "version_info" VALUES(1,12,'5.0.0');
CREATE UNIQUE INDEX ix_studies_study_name ON studies (study_name);
CREATE INDEX ix_trials_study_id ON trials (study_id);
COMMIT;
