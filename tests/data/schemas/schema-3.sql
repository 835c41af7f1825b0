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
INSERT INTO "commtune_meta" VALUES('schema_version','3');
CREATE TABLE commtune_platforms (
	"key" VARCHAR(32) NOT NULL, 
	data TEXT NOT NULL, 
	created FLOAT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "commtune_platforms" VALUES('71bdf03684039d8d','{"cpu_model": "AMD EPYC", "cores": 2, "mpi_vendor": "openmpi", "mpi_version": "4.1.4", "mpi_device": "pml:cm,monitoring,ob1,ucx,v btl:ofi,openib,self,tcp,vader", "ranks_per_node": null}',1.79547174477870941167e+09);
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
CREATE TABLE studies (
	study_id INTEGER NOT NULL, 
	study_name VARCHAR(512) NOT NULL, 
	PRIMARY KEY (study_id)
);
INSERT INTO "studies" VALUES(1,'s3');
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
INSERT INTO "study_user_attributes" VALUES(3,1,'acceptance','{"trial": 1, "params": {"btl_vader_eager_limit": 4096}, "default_values": [0.007397975999992923, 0.003995895000116434, 0.0037684389999412815, 0.004167315999893617, 0.004009970999959478], "best_values": [0.0037764229996355425, 0.003761604999908741, 0.003781623000122636, 0.004352924000158964, 0.004068982000262622], "speedup": 1.060383597156416, "ci": [0.9212131890685521, 1.9562965424509557], "p_value": 0.27380952380952384, "accepted": false, "measured_trials": 4, "reason": "not faster beyond noise"}');
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
INSERT INTO "trial_params" VALUES(2,3,'btl_vader_eager_limit',1.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(3,4,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(4,5,'btl_vader_eager_limit',0.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
INSERT INTO "trial_params" VALUES(5,6,'btl_vader_eager_limit',2.0,'{"name": "CategoricalDistribution", "attributes": {"choices": [12, 13, 14]}}');
CREATE TABLE trial_system_attributes (
	trial_system_attribute_id INTEGER NOT NULL, 
	trial_id INTEGER, 
	"key" VARCHAR(512), 
	value_json TEXT, 
	PRIMARY KEY (trial_system_attribute_id), 
	UNIQUE (trial_id, "key"), 
	FOREIGN KEY(trial_id) REFERENCES trials (trial_id)
);
INSERT INTO "trial_system_attributes" VALUES(1,4,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 12}"');
INSERT INTO "trial_system_attributes" VALUES(2,5,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 12}"');
INSERT INTO "trial_system_attributes" VALUES(3,6,'tpe:relative_params:0','"{\"btl_vader_eager_limit\": 14}"');
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
INSERT INTO "trial_user_attributes" VALUES(3,1,'runs','[{"value": 0.008154754999850411, "wall": 0.008154754999850411, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004615526999714348, "wall": 0.004615526999714348, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006529365999995207, "wall": 0.006529365999995207, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(4,2,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(5,2,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(6,3,'config','{"btl_vader_eager_limit": 8192}');
INSERT INTO "trial_user_attributes" VALUES(7,3,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(8,2,'runs','[{"value": 0.0081802519998746, "wall": 0.0081802519998746, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004182334000233823, "wall": 0.004182334000233823, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.0042262669999217906, "wall": 0.0042262669999217906, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(9,3,'runs','[{"value": 0.006337296000310744, "wall": 0.006337296000310744, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004326213999775064, "wall": 0.004326213999775064, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.004320233000271401, "wall": 0.004320233000271401, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
INSERT INTO "trial_user_attributes" VALUES(10,4,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(11,4,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(12,4,'duplicate_of','1');
INSERT INTO "trial_user_attributes" VALUES(13,5,'config','{"btl_vader_eager_limit": 4096}');
INSERT INTO "trial_user_attributes" VALUES(14,5,'role','"duplicate"');
INSERT INTO "trial_user_attributes" VALUES(15,5,'duplicate_of','1');
INSERT INTO "trial_user_attributes" VALUES(16,6,'config','{"btl_vader_eager_limit": 16384}');
INSERT INTO "trial_user_attributes" VALUES(17,6,'role','"search"');
INSERT INTO "trial_user_attributes" VALUES(18,6,'runs','[{"value": 0.008023920000141516, "wall": 0.008023920000141516, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006563059000200155, "wall": 0.006563059000200155, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}, {"value": 0.006614575999719818, "wall": 0.006614575999719818, "returncode": 0, "failure": null, "stderr_tail": "", "not_applied": {}}]');
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
INSERT INTO "trial_values" VALUES(1,1,0,6.52936599999520694836e-03,'FINITE');
INSERT INTO "trial_values" VALUES(2,2,0,4.22626699992179055698e-03,'FINITE');
INSERT INTO "trial_values" VALUES(3,3,0,4.32621399977506371214e-03,'FINITE');
INSERT INTO "trial_values" VALUES(4,4,0,4.22626699992179055698e-03,'FINITE');
INSERT INTO "trial_values" VALUES(5,5,0,4.22626699992179055698e-03,'FINITE');
INSERT INTO "trial_values" VALUES(6,6,0,6.61457599971981835551e-03,'FINITE');
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
INSERT INTO "trials" VALUES(1,0,1,'COMPLETE','2026-11-23 22:09:09.984125','2026-11-23 22:09:10.058936');
INSERT INTO "trials" VALUES(2,1,1,'COMPLETE','2026-11-23 22:09:10.077177','2026-11-23 22:09:10.192474');
INSERT INTO "trials" VALUES(3,2,1,'COMPLETE','2026-11-23 22:09:10.104349','2026-11-23 22:09:10.199242');
INSERT INTO "trials" VALUES(4,3,1,'COMPLETE','2026-11-23 22:09:10.208706','2026-11-23 22:09:10.233571');
INSERT INTO "trials" VALUES(5,4,1,'COMPLETE','2026-11-23 22:09:10.240870','2026-11-23 22:09:10.263938');
INSERT INTO "trials" VALUES(6,5,1,'COMPLETE','2026-11-23 22:09:10.271439','2026-11-23 22:09:10.332833');
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
