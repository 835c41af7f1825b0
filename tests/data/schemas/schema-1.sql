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
INSERT INTO "commtune_meta" VALUES('schema_version','1');
CREATE TABLE commtune_platforms (
	"key" VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_platforms" VALUES('71bdf03684039d8d','{"cpu_model": "AMD EPYC", "cores": 2, "mpi_vendor": "openmpi", "mpi_version": "4.1.4", "mpi_device": "pml:cm,monitoring,ob1,ucx,v btl:ofi,openib,self,tcp,vader", "ranks_per_node": null}',1.79547173525046014786e+09);
CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
INSERT INTO "studies" VALUES(1,'s1');
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
INSERT INTO "study_user_attributes" VALUES(3,1,'acceptance','{"trial": 2, "params": {"btl_vader_eager_limit": 16384}, "default_values": [], "best_values": [], "speedup": 0.9912536644235955, "ci": [0.0, 0.0], "p_value": 1.0, "accepted": false, "measured_trials": 4, "reason": "no configuration beat the default in the search"}');
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
INSERT INTO "trial_params" VALUES(1,2,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(2,3,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(3,4,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
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
INSERT INTO "trial_user_attributes" VALUES(3,1,'runs','[{"value": 0.005067664999842236, "wall": 0.005067664999842236, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004044536000037624, "wall": 0.004044536000037624, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.0039552880002702295, "wall": 0.0039552880002702295, "returncode": 0, "failure": null, "stderr_tail": ""}]');
INSERT INTO "trial_user_attributes" VALUES(4,2,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(5,2,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(6,3,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(7,3,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(8,2,'runs','[{"value": 0.005058688000190159, "wall": 0.005058688000190159, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004060255999775109, "wall": 0.004060255999775109, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.0041130440004053526, "wall": 0.0041130440004053526, "returncode": 0, "failure": null, "stderr_tail": ""}]');
INSERT INTO "trial_user_attributes" VALUES(9,3,'runs','[{"value": 0.004080222999618854, "wall": 0.004080222999618854, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004200067000056151, "wall": 0.004200067000056151, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004050897000070108, "wall": 0.004050897000070108, "returncode": 0, "failure": null, "stderr_tail": ""}]');
INSERT INTO "trial_user_attributes" VALUES(10,4,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(11,4,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(12,4,'runs','[{"value": 0.0052494759997898655, "wall": 0.0052494759997898655, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004695387000083429, "wall": 0.004695387000083429, "returncode": 0, "failure": null, "stderr_tail": ""}, {"value": 0.004084270000021206, "wall": 0.004084270000021206, "returncode": 0, "failure": null, "stderr_tail": ""}]');
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
INSERT INTO "trial_values" VALUES(1,1,0,4.04453600003762403503e-03,'FINITE');
INSERT INTO "trial_values" VALUES(2,2,0,4.11304400040535256266e-03,'FINITE');
INSERT INTO "trial_values" VALUES(3,3,0,4.08022299961885437369e-03,'FINITE');
INSERT INTO "trial_values" VALUES(4,4,0,4.69538700008342857472e-03,'FINITE');
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
INSERT INTO "trials" VALUES(1,0,1,'COMPLETE','2026-11-23 22:08:55.826876','2026-11-23 22:08:55.898764');
INSERT INTO "trials" VALUES(2,1,1,'COMPLETE','2026-11-23 22:08:55.916575','2026-11-23 22:08:56.032933');
INSERT INTO "trials" VALUES(3,2,1,'COMPLETE','2026-11-23 22:08:55.944734','2026-11-23 22:08:56.039673');
INSERT INTO "trials" VALUES(4,3,1,'COMPLETE','2026-11-23 22:08:56.048778','2026-11-23 22:08:56.109048');
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
