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
INSERT INTO "commtune_meta" VALUES('schema_version','2');
CREATE TABLE commtune_platforms (
	"key" VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_platforms" VALUES('71bdf03684039d8d','{"cpu_model": "AMD EPYC", "cores": 2, "mpi_vendor": "openmpi", "mpi_version": "4.1.4", "mpi_device": "pml:cm,monitoring,ob1,ucx,v btl:ofi,openib,self,tcp,vader", "ranks_per_node": null}',1.79547173707577252393e+09);
CREATE TABLE commtune_profiles (
	study VARCHAR(512) NOT NULL, 
	trial INTEGER NOT NULL, 
	run INTEGER NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY (study, trial, run)
);
CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
INSERT INTO "studies" VALUES(1,'s2');
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
INSERT INTO "study_user_attributes" VALUES(3,1,'acceptance','{"trial": 3, "params": {"btl_vader_eager_limit": 16384}, "default_values": [0.007052678000036394, 0.003802993000135757, 0.003814704999967944, 0.0038676249996569823, 0.004140326000197092], "best_values": [0.003860430999793607, 0.0037829259999853093, 0.0038392809997276345, 0.0037946870002087962, 0.004103867000139871], "speedup": 1.007382632303121, "ci": [0.942434294173072, 1.8369788511277825], "p_value": 0.15476190476190477, "accepted": false, "measured_trials": 4, "reason": "not faster beyond noise"}');
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
INSERT INTO "trial_params" VALUES(1,2,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(2,3,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(3,4,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(4,5,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(5,6,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(6,7,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
CREATE TABLE trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
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
INSERT INTO "trial_user_attributes" VALUES(3,1,'runs','[{"value": 0.012884706000022561, "wall": 0.012884706000022561, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.007278892000158521, "wall": 0.007278892000158521, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.008361101999980747, "wall": 0.008361101999980747, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(4,2,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(5,2,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(6,3,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(7,3,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(8,4,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(9,4,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(10,2,'runs','[{"value": 0.007541454000147496, "wall": 0.007541454000147496, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004377891000331147, "wall": 0.004377891000331147, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004282663000140019, "wall": 0.004282663000140019, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(11,4,'runs','[{"value": 0.004276710999874922, "wall": 0.004276710999874922, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.00428372499982288, "wall": 0.00428372499982288, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004248538999945595, "wall": 0.004248538999945595, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(12,5,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(13,5,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(14,5,'duplicate_of','3');
INSERT INTO "trial_user_attributes" VALUES(15,6,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(16,6,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(17,6,'duplicate_of','3');
INSERT INTO "trial_user_attributes" VALUES(18,7,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(19,7,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(20,7,'runs','[{"value": 0.007386074000351073, "wall": 0.007386074000351073, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004248387999723491, "wall": 0.004248387999723491, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006513426000310574, "wall": 0.006513426000310574, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
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
INSERT INTO "trial_values" VALUES(1,1,0,8.36110199998074676841e-03,'FINITE');
INSERT INTO "trial_values" VALUES(2,2,0,4.37789100033114664256e-03,'FINITE');
INSERT INTO "trial_values" VALUES(3,4,0,4.27671099987492198124e-03,'FINITE');
INSERT INTO "trial_values" VALUES(4,5,0,4.27671099987492198124e-03,'FINITE');
INSERT INTO "trial_values" VALUES(5,6,0,4.27671099987492198124e-03,'FINITE');
INSERT INTO "trial_values" VALUES(6,7,0,6.51342600031057372689e-03,'FINITE');
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
INSERT INTO "trials" VALUES(1,0,1,'COMPLETE','2026-11-23 22:09:02.524550','2026-11-23 22:09:02.620260');
INSERT INTO "trials" VALUES(2,1,1,'COMPLETE','2026-11-23 22:09:02.638528','2026-11-23 22:09:02.787555');
INSERT INTO "trials" VALUES(3,2,1,'PRUNED','2026-11-23 22:09:02.665274','2026-11-23 22:09:02.685930');
INSERT INTO "trials" VALUES(4,3,1,'COMPLETE','2026-11-23 22:09:02.693370','2026-11-23 22:09:02.794394');
INSERT INTO "trials" VALUES(5,4,1,'COMPLETE','2026-11-23 22:09:02.804126','2026-11-23 22:09:02.825867');
INSERT INTO "trials" VALUES(6,5,1,'COMPLETE','2026-11-23 22:09:02.833414','2026-11-23 22:09:02.854822');
INSERT INTO "trials" VALUES(7,6,1,'COMPLETE','2026-11-23 22:09:02.862087','2026-11-23 22:09:02.924638');
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
